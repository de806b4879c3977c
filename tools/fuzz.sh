#!/usr/bin/env bash
# tools/fuzz.sh TARGET SECONDS [libFuzzer flags...] — runs one fuzz target of tests/fuzz/ for
# SECONDS, configuring and building build-fuzz/ first when needed: clang-14, ASan + UBSan
# (aborting on the first report), the library instrumented for libFuzzer (-DFARTHING_FUZZ=ON).
# The working corpus grows in build-fuzz/fuzz-corpus/TARGET (seeded from tests/fuzz/corpus/TARGET);
# a crash, leak, hang or sanitizer report lands in build-fuzz/fuzz-artifacts/TARGET/.
# Targets: recipe safetensors gguf gguf_quant llama2c tok512 tokenizer_json pretokenizer
#          sentencepiece chat_template jsonl token_file h5_checkpoint
#   FARTHING_FUZZ_BUILD_DIR  build folder (default: build-fuzz)
#   FARTHING_FUZZ_JOBS       parallel compile jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 ]]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
[[ -d tests/fuzz/corpus/$target ]] || { echo "fuzz: no target '$target' (no tests/fuzz/corpus/$target)" >&2; exit 2; }
command -v clang++-14 >/dev/null || { echo "fuzz: needs clang-14 (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
build=${FARTHING_FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DFARTHING_CUDA=OFF -DFARTHING_FUZZ=ON \
    -DFARTHING_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" >/dev/null
fi
cmake --build "$build" --target "fuzz_$target" -j"${FARTHING_FUZZ_JOBS:-$(nproc)}"
corpus=$build/fuzz-corpus/$target
artifacts=$build/fuzz-artifacts/$target
mkdir -p "$corpus" "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$build/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$@" "$corpus" "tests/fuzz/corpus/$target"

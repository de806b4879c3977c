#!/usr/bin/env bash
# check.sh — the one script to run on the GPU machine, against the bundle from bundle.sh.
#
# Runs, continuing after any failure: nvidia-smi -L; .gpu/bin/test_cuda_parity (CPU vs CUDA,
# bitwise); every other .gpu/bin/test_* binary; `farthing info`; `farthing bench numerics`.
# Prints each step's exit code as it goes and a summary table at the end. Full logs go to
# $FARTHING_CHECK_LOG_DIR (default: $OUT/farthing-check when $OUT is set, else
# /tmp/farthing-check); a failing step also shows the tail of its log inline.
# FARTHING_SHARED_DIR is unset, so tests that need ../shared skip themselves.
#
# usage: tools/gpu/check.sh   (from anywhere inside the repository copy that holds .gpu/)
# exit status: 0 all passed (skips allowed except the parity test), 1 a step failed or timed
# out, 2 the parity test was skipped (no GPU visible to CUDA), 3 no bundle.
# Relies on: .gpu/ from tools/gpu/bundle.sh, bash, coreutils timeout. Tested by: running it on a
# machine without a GPU, where it stops at "no CUDA device: skipped" for the parity test.
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gpu="$root/.gpu"
if [[ ! -d "$gpu/bin" ]]; then
  echo "check.sh: $gpu/bin not found; run tools/gpu/bundle.sh on the build machine first" >&2
  exit 3
fi

# Bundled libraries first; the target's own CUDA toolkit (if any) only for what was not bundled.
export LD_LIBRARY_PATH="$gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d "$dir" ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
done
unset FARTHING_SHARED_DIR
# The compiled-in tests/data path is the build machine's; point at this copy's tests/data for
# any test that honours the variable.
export FARTHING_TEST_DATA_DIR="$root/tests/data"

log_dir="${FARTHING_CHECK_LOG_DIR:-${OUT:-/tmp}/farthing-check}"
mkdir -p "$log_dir"
step_timeout_s="${FARTHING_CHECK_TIMEOUT_S:-300}"

names=(); codes=(); states=(); seconds=()

# run_step NAME COMMAND... — runs with a timeout, logs, records the outcome; never aborts.
run_step() {
  local name="$1"; shift
  local log="$log_dir/$name.log"
  local start end rc state
  echo
  echo "== $name: $*"
  start=$(date +%s.%N)
  timeout --kill-after=10 "$step_timeout_s" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  case $rc in
    0) state=pass ;;
    77) state=skip ;;
    124|137) state=TIMEOUT ;;
    126|127) state=NOT-RUN ;;  # not executable, or the loader could not start it
    *) state=FAIL ;;
  esac
  if [[ $state == pass || $state == skip ]]; then
    tail -n 40 "$log" | sed 's/^/   | /'
  else
    tail -n 60 "$log" | sed 's/^/   | /'
  fi
  echo "== $name: exit $rc ($state), log $log"
  names+=("$name"); codes+=("$rc"); states+=("$state")
  seconds+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')")
}

echo "== farthing GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores"
echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
if command -v nvidia-smi >/dev/null 2>&1; then
  run_step nvidia-smi nvidia-smi -L
else
  echo "== nvidia-smi: not installed (no NVIDIA driver here?)"
  names+=("nvidia-smi"); codes+=("-"); states+=("absent"); seconds+=("0.0")
fi

echo
echo "== libraries the loader cannot find (should be none)"
missing=0
for bin in "$gpu"/bin/*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  while read -r line; do
    echo "   $(basename "$bin"): $line"; missing=1
  done < <(ldd "$bin" 2>/dev/null | grep "not found")
done
[[ $missing -eq 0 ]] && echo "   none"

# The parity test first: it is the point of running on a GPU.
if [[ -x "$gpu/bin/test_cuda_parity" ]]; then
  run_step test_cuda_parity "$gpu/bin/test_cuda_parity" --gtest_brief=1
else
  echo "== test_cuda_parity: missing from the bundle"
  names+=("test_cuda_parity"); codes+=("-"); states+=("MISSING"); seconds+=("0.0")
fi
for bin in "$gpu"/bin/test_*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  name="$(basename "$bin")"
  [[ $name == test_cuda_parity ]] && continue
  run_step "$name" "$bin" --gtest_brief=1
done

if [[ -x "$gpu/bin/farthing" ]]; then
  run_step "farthing-info" "$gpu/bin/farthing" info
  run_step "farthing-bench-numerics" "$gpu/bin/farthing" bench numerics
fi

echo
echo "== summary (logs in $log_dir)"
printf '%-30s %6s  %-8s %8s\n' step exit result seconds
failed=0; parity_skipped=0
for i in "${!names[@]}"; do
  printf '%-30s %6s  %-8s %8s\n' "${names[$i]}" "${codes[$i]}" "${states[$i]}" "${seconds[$i]}"
  case "${states[$i]}" in
    FAIL|TIMEOUT|NOT-RUN|MISSING) failed=1 ;;
  esac
  [[ ${names[$i]} == test_cuda_parity && ${states[$i]} == skip ]] && parity_skipped=1
done

if [[ $failed -ne 0 ]]; then
  echo "== RESULT: some steps failed"
  exit 1
fi
if [[ $parity_skipped -ne 0 ]]; then
  echo "== RESULT: no GPU visible to CUDA, so the parity test was skipped"
  exit 2
fi
echo "== RESULT: all passed"
exit 0

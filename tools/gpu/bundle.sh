#!/usr/bin/env bash
# bundle.sh — build a portable CUDA farthing here and pack it into .gpu/ for a GPU machine.
#
# The GPU machine has a CUDA driver but none of our build dependencies (MPI, HDF5, yaml-cpp,
# oneDNN, the CUDA runtime...). So: configure build-gpu/ without -march=native and with CUDA on,
# build everything (the farthing CLI and every test), copy build-gpu/bin/* to .gpu/bin/ and
# every shared library they load (per ldd) to .gpu/lib/, except what must come from the target
# machine itself: glibc (libc, libm, libdl, libpthread, librt, ld-linux) and the CUDA driver
# (libcuda, libnvidia-*). libstdc++/libgcc_s/libgomp are bundled: newer than the target's is
# harmless, older would fail with missing GLIBCXX versions.
# Then run tools/gpu/check.sh on the GPU machine (it sets LD_LIBRARY_PATH to .gpu/lib), or
# any binary through the launcher: .gpu/run farthing info
#
# usage: tools/gpu/bundle.sh            (from anywhere; JOBS=N to change build parallelism)
# Relies on: cmake, the CUDA toolkit, ldd. Tested by: running it, then tools/gpu/check.sh here
# (which stops at "no CUDA device" on a machine without a GPU).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="build-gpu"
out=".gpu"
jobs="${JOBS:-$(nproc)}"

# CMake 3.25 knows no C++20 flag for nvcc and rejects CMAKE_CUDA_STANDARD 20; nvcc itself has
# accepted -std=c++20 since CUDA 12. Newer CMake sets these itself and ignores ours.
cuda20_flags=()
cmake_version="$(cmake --version | head -n1 | awk '{print $3}')"
if [[ "$(printf '%s\n' "$cmake_version" 3.26 | sort -V | head -n1)" != 3.26 ]]; then
  cuda20_flags=(-DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20)
fi

echo "== configure $build (portable, CUDA on, Release)"
cmake -S . -B "$build" -DFARTHING_NATIVE=OFF -DFARTHING_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
  "${cuda20_flags[@]}"
echo "== build ($jobs jobs)"
cmake --build "$build" -j "$jobs"

echo "== pack $out/"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
binaries=()
for f in "$build"/bin/*; do
  [[ -f "$f" && -x "$f" ]] || continue
  cp -p "$f" "$out/bin/"
  binaries+=("$f")
done
[[ ${#binaries[@]} -gt 0 ]] || { echo "bundle.sh: no binaries in $build/bin" >&2; exit 1; }

# Libraries the target machine provides itself (glibc and the CUDA driver).
is_system_lib() {
  case "$1" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so*|libnvidia-*) return 0 ;;
    *) return 1 ;;
  esac
}

missing=0
declare -A copied=()
for f in "${binaries[@]}"; do
  # "libfoo.so.1 => /path/libfoo.so.1 (0x...)" or "libfoo.so.1 => not found"
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    is_system_lib "$name" && continue
    if [[ "$path" == "not" ]]; then
      echo "bundle.sh: $(basename "$f") needs $name, which ldd cannot find here" >&2
      missing=1
      continue
    fi
    [[ -n "${copied[$name]:-}" ]] && continue
    cp -L "$path" "$out/lib/$name"   # under its soname, the name the loader asks for
    copied[$name]="$path"
  done < <(ldd "$f")
done
[[ $missing -eq 0 ]] || exit 1

cat > "$out/run" <<'LAUNCHER'
#!/bin/sh
# run — start a bundled binary with the bundled libraries: .gpu/run farthing info
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BINARY [ARGS...]  (binaries: $(ls "$here/bin" | tr '\n' ' '))" >&2; exit 2; }
name="$1"; shift
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/$name" "$@"
LAUNCHER
chmod +x "$out/run"

for f in "$out"/bin/*; do echo "binary:   ${f#"$out"/}"; done
for f in "$out"/lib/*; do name="${f##*/}"; echo "library:  lib/$name <- ${copied[$name]}"; done
size_kib=$(du -sk "$out" | awk '{print $1}')
echo "bundle:   $out/ $((size_kib / 1024)) MiB"
if (( size_kib > 60 * 1024 )); then
  echo "bundle.sh: warning: $out/ is over 60 MiB; copying it to the GPU machine may hit a size limit" >&2
fi

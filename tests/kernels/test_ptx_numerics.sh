#!/usr/bin/env bash
# test_ptx_numerics.sh — compile-only check of the model-op kernels' PTX: the CPU-equal maths
# promised by kernels/numerics must not be changed by the compiler.
#
# Each .cu is compiled to PTX (compute_90) with the numerics flags the library is built with
# (FARTHING_CUDA_NUMERICS_FLAGS, one definition in kernels/cuda/CMakeLists.txt), then, per kernel
# (.entry / .func):
#   - no approximate or flushing instruction: rsqrt/ex2/lg2/sin/cos/tanh/rcp/sqrt .approx,
#     div.approx, div.full, any .ftz;
#   - no contracted fma.rn.f32: the only fmas allowed are numerics/exp_f32.h's nine explicit fmaf
#     per inlined e^x. Each inlined exp_f32 has exactly one "add.f32 x, 0f4B400000" (its
#     round-to-integer step; contraction would fuse that add into an fma), so a kernel must hold
#     exactly 9 x (those adds) fma.rn.f32, plus any whitelisted extra below.
# Whitelist (kernel name substring, extra fma.rn.f32 allowed, extra instruction allowed, why):
#   attention_forward_kernel  96  -  libdevice's logf for the lse (12 fma each, 8 unrolled rows);
#                                    the lse is compared within the attention tolerance.
#   cross_entropy_row_kernel   0  rcp.approx.ftz.f64  libdevice's double log() seeds its Newton
#                                    steps with it (result within 1 ulp); the loss is compared
#                                    within 1e-9 relative.
# usage: test_ptx_numerics.sh NVCC SOURCE_ROOT WORK_DIR "NUMERICS FLAGS" FILE.cu...
# exit: 0 clean, 1 a violation (each printed), 2 usage or compile error, 77 no nvcc (skipped).
# Relies on: nvcc, awk. Tested by: itself (breaking a kernel on purpose, see docs/cuda_ops.md).
set -uo pipefail

(($# >= 5)) || { echo "usage: $0 NVCC SOURCE_ROOT WORK_DIR FLAGS FILE.cu..." >&2; exit 2; }
nvcc="$1" root="$2" work="$3" flags="$4"
shift 4
# A packaged copy of the test on a machine without the toolkit (the GPU machine) skips.
[[ -x "$nvcc" ]] || { echo "no nvcc at $nvcc: skipped"; exit 77; }
mkdir -p "$work"
status=0
for cu in "$@"; do
  ptx="$work/$(basename "$cu" .cu).ptx"
  # shellcheck disable=SC2086  # flags are a word list
  if ! "$nvcc" -std=c++20 -arch=compute_90 $flags -I"$root" -ptx "$cu" -o "$ptx"; then
    echo "FAIL: $cu does not compile to PTX" >&2
    exit 2
  fi
  awk -v file="$(basename "$cu")" '
    function finish() {
      if (name == "") return
      extra = 0
      if (name ~ /attention_forward_kernel/) extra = 96
      if (fma != 9 * exps + extra) {
        printf "FAIL %s %s: %d fma.rn.f32 where 9 x %d exp_f32 + %d whitelisted allow %d (a contracted a*b+c?)\n", file, name, fma, exps, extra, 9 * exps + extra
        bad = 1
      }
      kernels++
    }
    /^[.a-z ]*\.(entry|func) / {
      finish()
      name = $0; sub(/\(.*/, "", name); n = split(name, parts, " "); name = parts[n]; fma = 0; exps = 0
    }
    name != "" && /fma\.rn\.f32/ { fma++ }
    name != "" && /add(\.rn)?\.f32.*0f4B400000/ { exps++ }
    name != "" && /(rsqrt|ex2|lg2|sin|cos|tanh|rcp|sqrt|div)\.approx|div\.full|\.ftz/ {
      line = $0; gsub(/^[ \t]+/, "", line)
      if (!(name ~ /cross_entropy_row_kernel/ && line ~ /^rcp\.approx\.ftz\.f64/)) {
        printf "FAIL %s %s: approximate or flushing instruction: %s\n", file, name, line
        bad = 1
      }
    }
    END { finish(); printf "%s: %d kernels checked%s\n", file, kernels, bad ? " — VIOLATIONS" : ", clean"; exit bad }
  ' "$ptx" || status=1
done
exit $status

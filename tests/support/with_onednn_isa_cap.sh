#!/usr/bin/env bash
# with_onednn_isa_cap.sh CAP COMMAND... — runs COMMAND with oneDNN capped at CAP
# (ONEDNN_MAX_CPU_ISA), so that one machine also checks the GEMM kernels of lesser processors:
# an AMX machine runs oneDNN's AVX2 and AVX-512 kernels, whose bits (and whose old splitting of
# the reduction by thread count) differ from its own. Exits 77 (skipped) when CAP is not
# below this processor's own level: the uncapped run already covers it.
# CAP: AVX2, AVX512_CORE or AVX512_CORE_BF16 (oneDNN's names; each picks other GEMM kernels).
set -euo pipefail
cap="$1"
shift
level_of() {
  case "$1" in
    AVX2) echo 1 ;; AVX512_CORE) echo 2 ;; AVX512_CORE_BF16) echo 3 ;; AVX512_CORE_AMX) echo 4 ;;
    *) echo "with_onednn_isa_cap: unknown cap '$1' (AVX2, AVX512_CORE, AVX512_CORE_BF16)" >&2; exit 2 ;;
  esac
}
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
has() { [[ $flags == *" $1 "* ]]; }
machine=0
has avx2 && machine=1
has avx512f && has avx512bw && has avx512vl && has avx512dq && machine=2
((machine == 2)) && has avx512_bf16 && machine=3
((machine >= 2)) && has amx_tile && has amx_bf16 && machine=4
if (($(level_of "$cap") >= machine)); then
  echo "SKIP: this processor's own oneDNN level is not above $cap; the uncapped run covers it"
  exit 77
fi
echo "with_onednn_isa_cap: ONEDNN_MAX_CPU_ISA=$cap"
# FARTHING_ONEDNN_ISA_CAP tells the tests which cap to check took effect (OneDnnIsaCap in
# tests/kernels/test_nn_ops_parity.cpp, tests/support/check_onednn_isa_cap.sh): set apart from the
# variable oneDNN reads, so a cap that never reached oneDNN fails instead of going unchecked.
export FARTHING_ONEDNN_ISA_CAP="$cap" ONEDNN_MAX_CPU_ISA="$cap"
exec "$@"

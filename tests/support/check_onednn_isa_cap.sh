#!/usr/bin/env bash
# check_onednn_isa_cap.sh CAP LOG — did oneDNN honour the cap CAP in the run whose ONEDNN_VERBOSE=1
# output is LOG? The ISA oneDNN says it dispatches to (its info line) must be CAP's, in oneDNN's own
# words for each cap, and no matmul it ran may name an ISA above CAP in its implementation
# (brg:avx512_core_bf16 names one, gemm:jit none). One line, exit 1, otherwise.
# Used by tests/train/loop/test_train_threads.sh under tests/support/with_onednn_isa_cap.sh.
set -euo pipefail
cap="$1"
log="$2"
rank_of() {  # the caps' order; an ISA not listed ranks by its family
  case "$1" in
    avx2) echo 2 ;; avx2_vnni) echo 3 ;; avx512_core) echo 4 ;; avx512_core_vnni) echo 5 ;;
    avx512_core_bf16) echo 6 ;; *amx*) echo 8 ;; avx512*) echo 5 ;; *) echo 1 ;;
  esac
}
case "$cap" in
  AVX2) want="Intel AVX2" ;;
  AVX512_CORE) want="Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions" ;;
  AVX512_CORE_BF16) want="Intel AVX-512 with Intel DL Boost and bfloat16 support" ;;
  *) echo "check_onednn_isa_cap: unknown cap '$cap' (AVX2, AVX512_CORE, AVX512_CORE_BF16)"; exit 2 ;;
esac
cap_rank=$(rank_of "${cap,,}")
isa=$(sed -n 's/.*info,cpu,isa:\(.*\)$/\1/p' "$log" | head -1)
[[ -n $isa ]] || { echo "FAIL: no oneDNN isa line in $log (ONEDNN_VERBOSE=1 unset, or no oneDNN primitive ran)"; exit 1; }
[[ $isa == "$want" ]] || { echo "FAIL: capped at $cap, but oneDNN dispatches to '$isa' (the cap did not take effect)"; exit 1; }
impls=$(sed -n 's/.*,exec,cpu,matmul,\([^,]*\),.*/\1/p' "$log" | sort -u)
[[ -n $impls ]] || { echo "FAIL: no matmul ran in $log"; exit 1; }
for impl in $impls; do
  name=${impl##*:}
  case "$name" in avx* | *amx*) ;; *) continue ;; esac
  (($(rank_of "$name") <= cap_rank)) || { echo "FAIL: capped at $cap, but oneDNN ran the matmul $impl"; exit 1; }
done
echo "ok: oneDNN capped at $cap ('$isa'); its matmuls: $(echo $impls)"

#!/usr/bin/env bash
# zero_staged_check.sh FARTHING MPIRUN [WORK_DIR] — ZeRO-3 over two ranks sharing one GPU, for a
# GPU session. NCCL refuses two ranks on one device, so the device communicator stages the
# collectives through the host (MPI; framework/dist/device_communicator.h). Two ranks with one
# micro-batch each must give the same loss at every step, bit for bit, as one rank with two
# micro-batches (the store's fixed sum orders: param_store.h's NOTE), both with each reduction
# waited for at once and with a pass's reductions left in flight (distributed.reduce_bucket_mib).
# GPT-2 124M from random init on synthetic tokens, bf16 compute, 8-bit AdamW with an fp32 master.
# The losses are compared as metrics.jsonl prints them (shortest round-trip decimals: equal text
# is equal bits); checkpoints are not compared (the GPU machine has no h5dump).
# ZERO_CHECK_DEVICE=strict (or cpu): the same runs on the CPU kernels, as a dry run without a GPU
# (with ZERO_CHECK_PRESET=stories260k to keep it short). Exit 77 without a visible GPU.
# Needs python3 (to write the token file). Its runs on a GPU: docs/results.md.
set -euo pipefail
farthing="$1"
mpirun="$2"
work="${3:-$(mktemp -d /tmp/farthing_zero_staged.XXXXXX)}"
device="${ZERO_CHECK_DEVICE:-cuda}"
preset="${ZERO_CHECK_PRESET:-gpt2-124m}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
source "$src/tools/gpu/run_common.sh"
mkdir -p "$work"
skip_without_gpu zero_staged_check "$device"
case "$preset" in
  gpt2-124m) vocab=50257 ;;
  stories260k) vocab=512 ;;
  *) echo "zero_staged_check: no vocabulary size known for preset $preset" >&2; exit 2 ;;
esac
write_tokens "$work/tokens.tok" "$vocab" $((40 * 4 * 129)) 4321
common=(--set "model.preset=$preset" --set model.path= --set "data.train=$work/tokens.tok" --set data.format=tokens
        --set data.seq_len=128 --set train.micro_batch=2 --set train.steps=5 --set schedule.warmup_steps=1
        --set train.eval_batches=1 --set train.eval_every=0 --set checkpoint.save_every=0
        --set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=f32
        --set optimizer.weight_rounding=stochastic --set train.max_grad_norm=0
        --set distributed.zero_stage=3 --set "train.device=$device" --quiet)
recipe="$src/recipes/gpt2/124m_full_single_device.yaml"
losses() { grep -o '"loss":[^,}]*' "$1/metrics.jsonl"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No thread pin: the CPU GEMMs' bits depend on their shapes only, as a GPU's do, so np 1
# on every core equals np 2 with the cores split between the ranks.

start=$SECONDS
"$farthing" train "$recipe" "${common[@]}" --set train.grad_accum=2 --set "checkpoint.run_dir=$work/np1"
echo "zero_staged_check: np 1, grad_accum 2 on $device took $((SECONDS - start)) s"
[[ $(losses "$work/np1" | wc -l) -eq 5 ]] || { echo "zero_staged_check: expected 5 losses from np 1"; exit 1; }
status=0
for bucket in 0 64; do
  rm -rf "$work/np2-b$bucket"
  start=$SECONDS
  "$mpirun" --oversubscribe -np 2 "$farthing" train "$recipe" "${common[@]}" --set train.grad_accum=1 \
    --set "distributed.reduce_bucket_mib=$bucket" --set "checkpoint.run_dir=$work/np2-b$bucket"
  echo "zero_staged_check: np 2 (staged through the host), reduce_bucket_mib $bucket, took $((SECONDS - start)) s"
  if diff <(losses "$work/np1") <(losses "$work/np2-b$bucket"); then
    echo "ok: np 2 ZeRO-3 on one $device device, reduce_bucket_mib $bucket == np 1 bit for bit"
  else
    echo "FAIL: np 2 ZeRO-3 on one $device device, reduce_bucket_mib $bucket: losses differ from np 1 (diff above)"
    status=1
  fi
done
paste <(losses "$work/np1") <(losses "$work/np2-b0") | sed 's/^/zero_staged_check: np1 | np2: /'
exit $status

#!/usr/bin/env bash
# The trainer on the strict test device (train.device: strict; backend/strict_device_backend.h):
# CPU kernels over memory the host may not touch, so any host assumption left on the training
# path — a host read or write of the store, the optimizer state or the activations, a host
# pointer handed to an op, a device pointer tagged as host — crashes or fails the run. Each run
# must equal the CPU run bit for bit (losses and every byte of the checkpoint):
#   - plain steps (8-bit + SR, no master), an fp32 master at precision fp32 (the compute reads
#     the master), remainder16 with 4-bit moments, ZeRO-3's unit storage, the optimizer step
#     fused into backward;
#   - exact resume on the device, a device checkpoint resumed on the CPU and the reverse;
#     generating from it;
#   - mpirun -np 2 at ZeRO-3 (collectives staged through the host), against the CPU at np 2, and
#     with the gradient reductions left in flight during backward (distributed.reduce_bucket_mib).
source "$(dirname "$0")/train_test_common.sh"

run() {  # run NAME DEVICE [extra args...]
  local name="$1" device="$2"; shift 2
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "train.device=$device" --set "checkpoint.run_dir=$WORK/$name" "$@" \
    >/dev/null
}
same_run() {  # same_run A B: equal losses and equal final checkpoints
  diff <(losses "$WORK/$1/metrics.jsonl") <(losses "$WORK/$2/metrics.jsonl") >/dev/null \
    || fail "losses differ: $1 vs $2"
  [ "$(losses "$WORK/$1/metrics.jsonl" | wc -l)" -eq 6 ] || fail "$1: expected 6 loss records"
  same_checkpoint "$WORK/$1/checkpoints/step_00000006.h5" "$WORK/$2/checkpoints/step_00000006.h5"
}

check() {  # check NAME [config...]: strict == cpu, bit for bit
  local name="$1"; shift
  run "$name-cpu" cpu "$@"
  run "$name-strict" strict "$@"
  same_run "$name-cpu" "$name-strict"
  echo "ok: $name on the strict device == cpu bit for bit"
}

SR8=(--set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=none
     --set optimizer.weight_rounding=stochastic --set optimizer.embedding_f32_state=false)
check 8bit-sr "${SR8[@]}"
check fp32-master --set train.precision=fp32 --set optimizer.state=f32 --set optimizer.master=f32 \
  --set optimizer.weight_rounding=nearest
check remainder16-4bit --set optimizer.state=4bit --set optimizer.master=remainder16 \
  --set optimizer.weight_rounding=nearest
PLAIN=(--set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=f32
       --set optimizer.weight_rounding=stochastic --set train.max_grad_norm=0 --set train.nonfinite=fail)
check zero3 "${PLAIN[@]}" --set distributed.zero_stage=3 --set train.grad_accum=2
check fused "${PLAIN[@]}" --set train.optimizer_in_backward=true

# Generation from the device run's checkpoint (greedy) gives the CPU run's text.
gen() {
  "$FARTHING" generate --model "$WORK/$1/checkpoints/step_00000006.h5" --tokenizer "$SHARED/models/stories260K/tok512.bin" \
    --max-new-tokens 40 --temperature 0 2>/dev/null
}
[ "$(gen 8bit-sr-strict)" = "$(gen 8bit-sr-cpu)" ] && [ -n "$(gen 8bit-sr-strict)" ] \
  || fail "generate from the strict run's checkpoint differs from the cpu run's"
echo "ok: generating from the strict-device checkpoint == from the cpu one"

# Exact resume on the device, and the device's checkpoint resumed on the CPU.
run split-strict strict "${SR8[@]}" --stop-at 3
run split-strict strict "${SR8[@]}" --resume latest
same_run 8bit-sr-cpu split-strict
echo "ok: the strict device resumes bit for bit"
run cross strict "${SR8[@]}" --stop-at 3
run cross cpu "${SR8[@]}" --resume latest
same_run 8bit-sr-cpu cross
echo "ok: a strict-device checkpoint resumes on the cpu bit for bit"
run cross-back cpu "${SR8[@]}" --stop-at 3
run cross-back strict "${SR8[@]}" --resume latest
same_run 8bit-sr-cpu cross-back
echo "ok: a cpu checkpoint resumes on the strict device bit for bit"

# ZeRO-3 over two ranks: the collectives on device buffers go through host staging.
if command -v mpirun >/dev/null; then
  for device in cpu strict; do
    mpirun --oversubscribe -np 2 "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${PLAIN[@]}" \
      --set distributed.zero_stage=3 --set "train.device=$device" --set "checkpoint.run_dir=$WORK/np2-$device" >/dev/null
  done
  same_run np2-cpu np2-strict
  echo "ok: mpirun -np 2 ZeRO-3 on the strict device == cpu bit for bit"
  # The staged reductions left in flight during backward (the staging held until each is waited for).
  mpirun --oversubscribe -np 2 "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${PLAIN[@]}" --set distributed.zero_stage=3 \
    --set distributed.reduce_bucket_mib=1 --set train.device=strict --set "checkpoint.run_dir=$WORK/np2-strict-inflight" >/dev/null
  same_run np2-cpu np2-strict-inflight
  echo "ok: mpirun -np 2 ZeRO-3 on the strict device with reductions in flight == cpu bit for bit"
else
  fail "mpirun not found; the np=2 part of this test needs Open MPI (tools/setup.sh installs it)"
fi

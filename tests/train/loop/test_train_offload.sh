#!/usr/bin/env bash
# optimizer.offload: host on the strict test device (backend/strict_device_backend.h), whose
# memory the host cannot touch: the master and moments live in host memory, so every gradient
# that reaches the host step and every weight that comes back is an explicit copy
# (backend/host_transfer.h). An offloaded run must equal the device-resident run bit for bit
# (losses and every byte of the final checkpoint), over 6 steps and across resume:
#   - 8-bit moments + stochastic rounding without a master, and f32 moments + an f32 master;
#   - the optimizer step after backward, and fused into backward;
#   - a ring of one unit's buffers (each shard's copies wait for the previous shard's);
#   - exact resume offloaded, and a checkpoint of an offloaded run resumed without offload and
#     the reverse (the checkpoint does not depend on where the state lived);
#   - mpirun -np 2 at ZeRO-1 and ZeRO-3 (each rank offloads its own shards), fused at ZeRO-2.
source "$(dirname "$0")/train_test_common.sh"

run() {  # run NAME OFFLOAD [extra args...]
  local name="$1" offload="$2"; shift 2
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.device=strict --set "optimizer.offload=$offload" \
    --set "checkpoint.run_dir=$WORK/$name" "$@" >/dev/null
}
run_np2() {  # run_np2 NAME OFFLOAD [extra args...]
  local name="$1" offload="$2"; shift 2
  mpirun --oversubscribe -np 2 "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.device=strict \
    --set "optimizer.offload=$offload" --set "checkpoint.run_dir=$WORK/$name" "$@" >/dev/null
}
# The "unchanged_fraction" of every training record: the share of weights a step left as they
# were, counted by the host step from the weights it was given (with an fp32 master the new
# weights come from the master, so only this shows a weight copy out that never happened).
unchanged() { grep -o '"unchanged_fraction":[^,}]*' "$1"; }
same_run() {  # same_run A B: equal losses and unchanged fractions, and equal final checkpoints
  diff <(losses "$WORK/$1/metrics.jsonl") <(losses "$WORK/$2/metrics.jsonl") >/dev/null \
    || fail "losses differ: $1 vs $2"
  diff <(unchanged "$WORK/$1/metrics.jsonl") <(unchanged "$WORK/$2/metrics.jsonl") >/dev/null \
    || fail "unchanged fractions differ: $1 vs $2"
  [ "$(losses "$WORK/$1/metrics.jsonl" | wc -l)" -eq 6 ] || fail "$1: expected 6 loss records"
  same_checkpoint "$WORK/$1/checkpoints/step_00000006.h5" "$WORK/$2/checkpoints/step_00000006.h5"
}

SR8=(--set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=none
     --set optimizer.weight_rounding=stochastic --set optimizer.embedding_f32_state=false)
F32M=(--set train.precision=bf16 --set optimizer.state=f32 --set optimizer.master=f32
      --set optimizer.weight_rounding=nearest)
FUSED=(--set train.optimizer_in_backward=true --set train.max_grad_norm=0 --set train.nonfinite=fail)

for case in sr8 f32m; do
  if [ $case = sr8 ]; then config=("${SR8[@]}"); else config=("${F32M[@]}"); fi
  run "$case-device" none "${config[@]}"
  run "$case-host" host "${config[@]}"
  same_run "$case-device" "$case-host"
  echo "ok: $case: offloaded == device-resident bit for bit"
  run "$case-host-split" host "${config[@]}" --stop-at 3
  run "$case-host-split" host "${config[@]}" --resume latest
  same_run "$case-device" "$case-host-split"
  echo "ok: $case: an offloaded run resumes bit for bit"
  run "$case-to-device" host "${config[@]}" --stop-at 3
  run "$case-to-device" none "${config[@]}" --resume latest
  same_run "$case-device" "$case-to-device"
  run "$case-to-host" none "${config[@]}" --stop-at 3
  run "$case-to-host" host "${config[@]}" --resume latest
  same_run "$case-device" "$case-to-host"
  echo "ok: $case: offloaded -> device-resident resume and the reverse, bit for bit"
  run "$case-fused-device" none "${config[@]}" "${FUSED[@]}"
  run "$case-fused-host" host "${config[@]}" "${FUSED[@]}"
  same_run "$case-fused-device" "$case-fused-host"
  echo "ok: $case: optimizer in backward, offloaded == device-resident bit for bit"
done
run f32m-ring1 host "${F32M[@]}" --set optimizer.offload_ring_units=1
same_run f32m-device f32m-ring1
echo "ok: a ring of one unit's buffers == device-resident bit for bit"

if ! command -v mpirun >/dev/null; then
  fail "mpirun not found; the np=2 part of this test needs Open MPI (tools/setup.sh installs it)"
fi
for stage in 1 3; do
  for case in sr8 f32m; do
    if [ $case = sr8 ]; then config=("${SR8[@]}"); else config=("${F32M[@]}"); fi
    run_np2 "np2-z$stage-$case-device" none "${config[@]}" --set distributed.zero_stage=$stage
    run_np2 "np2-z$stage-$case-host" host "${config[@]}" --set distributed.zero_stage=$stage --stop-at 3
    run_np2 "np2-z$stage-$case-host" host "${config[@]}" --set distributed.zero_stage=$stage --resume latest
    same_run "np2-z$stage-$case-device" "np2-z$stage-$case-host"
    echo "ok: np 2 ZeRO-$stage $case: offloaded (stopped at 3, resumed) == device-resident bit for bit"
  done
done
run_np2 np2-z2-fused-device none "${SR8[@]}" "${FUSED[@]}" --set distributed.zero_stage=2
run_np2 np2-z2-fused-host host "${SR8[@]}" "${FUSED[@]}" --set distributed.zero_stage=2
same_run np2-z2-fused-device np2-z2-fused-host
echo "ok: np 2 ZeRO-2 fused: offloaded == device-resident bit for bit"
# Resharded and mode-changing at once: np 2 offloaded to np 1 device-resident (two micro-batches
# of one rank are the two ranks' one each: the same global batch, summed in the same order).
run_np2 np2-to-np1 host "${SR8[@]}" --set distributed.zero_stage=3 --stop-at 3
run np2-to-np1 none "${SR8[@]}" --set distributed.zero_stage=3 --set train.grad_accum=2 --resume latest
same_run np2-z3-sr8-device np2-to-np1
echo "ok: np 2 offloaded -> np 1 device-resident resume == np 2 device-resident bit for bit"

# Bad input: a clear error naming the key.
expect_error "offload with fp32 compute from an fp32 master" "optimizer.offload" "train.precision" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set optimizer.offload=host --set train.precision=fp32 \
  --set optimizer.master=f32 --set optimizer.weight_rounding=nearest --set "checkpoint.run_dir=$WORK/bad"
expect_error "an unknown offload" "optimizer.offload" "none" "host" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set optimizer.offload=disk --set "checkpoint.run_dir=$WORK/bad2"

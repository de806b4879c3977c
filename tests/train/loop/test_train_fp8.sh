#!/usr/bin/env bash
# FP8 linear layers (train.precision: fp8, the fp8 section) through the CLI on stories260K:
#  - every scaling recipe (block, tensor_current, tensor_delayed) trains (the loss drops);
#  - world-size invariance: ZeRO-3 at np=2 gives the np=1 losses and checkpoint bit for bit,
#    delayed scaling's amax history included (its step amaxes are max-reduced over the ranks);
#  - exact resume: a delayed-scaling run stopped at step 3 and resumed gives the straight run's
#    losses and final checkpoint bit for bit (the history is in the checkpoint: fp8/amax_history),
#    and a checkpoint saved at np=2 resumes at np=1 on the same curve;
#  - bad fp8 keys get a one-line error naming the key.
source "$(dirname "$0")/train_test_common.sh"
MPIRUN=(mpirun --oversubscribe)


FP8=("${SMALL[@]}" --set train.precision=fp8 --set train.micro_batch=2 --set optimizer.state=8bit
     --set optimizer.master=f32)
for scaling in block tensor_current tensor_delayed; do
  "$FARTHING" train "$RECIPE" "${FP8[@]}" --set fp8.scaling=$scaling --set train.grad_accum=2 \
    --set "checkpoint.run_dir=$WORK/$scaling-np1" >/dev/null
  log="$WORK/$scaling-np1/metrics.jsonl"
  first="$(losses "$log" | sed -n 1p | cut -d: -f2)"
  last="$(losses "$log" | tail -1 | cut -d: -f2)"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "fp8 $scaling did not reduce the loss ($first -> $last)"
  # Every step says how many GEMM shapes missed the FP8 kernels: none on the CPU, which emulates.
  [[ $(grep -c '"fp8_fallback_shapes":0[,}]' "$log") -eq $(losses "$log" | wc -l) ]] \
    || fail "fp8 $scaling: metrics.jsonl lacks fp8_fallback_shapes 0 on a step"
  "${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${FP8[@]}" --set fp8.scaling=$scaling --set train.grad_accum=1 \
    --set distributed.zero_stage=3 --set "checkpoint.run_dir=$WORK/$scaling-np2" >/dev/null
  diff <(losses "$log") <(losses "$WORK/$scaling-np2/metrics.jsonl") || fail "fp8 $scaling: np=2 losses differ from np=1"
  same_checkpoint "$WORK/$scaling-np1/checkpoints/step_00000006.h5" "$WORK/$scaling-np2/checkpoints/step_00000006.h5"
  echo "ok: fp8 $scaling trains (loss $first -> $last); ZeRO-3 np=2 == np=1 bit for bit"
done
# (h5dump's header to a file first: grep -q closing the pipe early would fail it under pipefail.)
h5dump -H "$WORK/tensor_delayed-np1/checkpoints/step_00000006.h5" >"$WORK/delayed.h5.txt"
grep -q '"amax_history"' "$WORK/delayed.h5.txt" || fail "a delayed-scaling checkpoint lacks fp8/amax_history"
h5dump -H "$WORK/block-np1/checkpoints/step_00000006.h5" >"$WORK/block.h5.txt"
if grep -q '"amax_history"' "$WORK/block.h5.txt"; then
  fail "a block-scaling checkpoint holds an amax history it does not use"
fi

# Exact resume of delayed scaling, at the same world size and from np=2 to np=1.
D=("${FP8[@]}" --set fp8.scaling=tensor_delayed --set fp8.amax_history_len=4 --set train.grad_accum=2)
"$FARTHING" train "$RECIPE" "${D[@]}" --set "checkpoint.run_dir=$WORK/d-split" --stop-at 3 >/dev/null
"$FARTHING" train "$RECIPE" "${D[@]}" --set "checkpoint.run_dir=$WORK/d-split" --resume latest >/dev/null
"$FARTHING" train "$RECIPE" "${D[@]}" --set "checkpoint.run_dir=$WORK/d-straight" >/dev/null
diff <(losses "$WORK/d-straight/metrics.jsonl") <(losses "$WORK/d-split/metrics.jsonl") || fail "fp8 delayed resume differs"
same_checkpoint "$WORK/d-straight/checkpoints/step_00000006.h5" "$WORK/d-split/checkpoints/step_00000006.h5"
echo "ok: fp8 delayed scaling stopped at step 3 and resumed == the straight run bit for bit"
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${D[@]}" --set train.grad_accum=1 \
  --set "checkpoint.run_dir=$WORK/d-np2" --stop-at 3 >/dev/null
"$FARTHING" train "$RECIPE" "${D[@]}" --set "checkpoint.run_dir=$WORK/d-resharded" \
  --resume "$WORK/d-np2/checkpoints/step_00000003.h5" >/dev/null
diff <(losses "$WORK/d-straight/metrics.jsonl" | tail -3) <(losses "$WORK/d-resharded/metrics.jsonl") \
  || fail "fp8 delayed: np=2 checkpoint resumed at np=1 left the curve"
same_checkpoint "$WORK/d-straight/checkpoints/step_00000006.h5" "$WORK/d-resharded/checkpoints/step_00000006.h5"
echo "ok: fp8 delayed scaling saved at np=2 resumes at np=1 bit for bit"

expect_error "an unknown fp8 scaling" "fp8.scaling" "tensor_delayed" -- \
  "$FARTHING" train "$RECIPE" "${FP8[@]}" --set fp8.scaling=delayed --set "checkpoint.run_dir=$WORK/bad1"
expect_error "a margin out of range" "fp8.margin" "0..32" -- \
  "$FARTHING" train "$RECIPE" "${FP8[@]}" --set fp8.margin=40 --set "checkpoint.run_dir=$WORK/bad2"
expect_error "a format name for train.precision" "train.precision" "fp8.grad_output" -- \
  "$FARTHING" train "$RECIPE" "${FP8[@]}" --set train.precision=fp8_e4m3 --set "checkpoint.run_dir=$WORK/bad3"

#!/usr/bin/env bash
# TensorBoard event files of a real run, read by TensorBoard's own EventAccumulator
# (tools/goldens/check_tensorboard.py): every scalar equals metrics.jsonl's record, step for step;
# a run resumed from an earlier checkpoint than its last logged step adds a second file and
# TensorBoard shows the resumed steps only (SessionLog START); metrics.tensorboard=false writes none.
# Skipped (77) without the tensorboard Python package or ../shared.
source "$(dirname "$0")/train_test_common.sh"
python3 -c "import tensorboard" 2>/dev/null || { echo "SKIP: python3 cannot import tensorboard (pip install tensorboard)"; exit 77; }
CHECK=(python3 "$SRC/tools/goldens/check_tensorboard.py")

"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.eval_every=2 --set "checkpoint.run_dir=$WORK/run" >/dev/null
"${CHECK[@]}" "$WORK/run" --expect-files 1 || fail "TensorBoard's reader disagrees with metrics.jsonl (one run)"
echo "ok: one run, one event file, every tag equal to metrics.jsonl"

# Stop after step 5, resume from the step-2 checkpoint: metrics.jsonl drops steps 3..5 and the
# second file's SessionLog START makes TensorBoard drop them from the first file.
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.eval_every=2 --set checkpoint.save_every=2 \
  --set checkpoint.keep_last=0 --set "checkpoint.run_dir=$WORK/resumed" --stop-at 5 >/dev/null
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.eval_every=2 --set checkpoint.save_every=2 \
  --set checkpoint.keep_last=0 --set "checkpoint.run_dir=$WORK/resumed" \
  --resume "$WORK/resumed/checkpoints/step_00000002.h5" >/dev/null
"${CHECK[@]}" "$WORK/resumed" --expect-files 2 || fail "TensorBoard's reader disagrees with metrics.jsonl (resumed)"
[ "$(losses "$WORK/resumed/metrics.jsonl" | wc -l)" -eq 6 ] || fail "resumed: expected 6 loss records"
echo "ok: resumed from step 2 after step 5: two event files, TensorBoard shows steps 1..6 once"

"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set metrics.tensorboard=false --set "checkpoint.run_dir=$WORK/off" >/dev/null
! ls "$WORK/off"/events.out.tfevents.* >/dev/null 2>&1 || fail "metrics.tensorboard=false still wrote an event file"
echo "ok: metrics.tensorboard=false writes no event file"

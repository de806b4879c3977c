#!/usr/bin/env bash
# fp16 compute with dynamic loss scaling through the CLI (docs/numerics.md §5): started at a scale
# too large for fp16 (2^24), the scaled gradients overflow, so the first steps are skipped (counted, the
# weights untouched) and the scale halves each time until the gradients are finite; then
# training proceeds and the loss drops. The scaler's state is part of the checkpoint: a run
# stopped and resumed mid-way gives the same log, bit for bit.
source "$(dirname "$0")/train_test_common.sh"

FP16=("${SMALL[@]}" --set train.precision=fp16 --set loss_scale.initial=1.6777216e7
      --set loss_scale.growth_interval=3 --set train.steps=40 --set train.nonfinite=skip)
"$FARTHING" train "$RECIPE" "${FP16[@]}" --set "checkpoint.run_dir=$WORK/straight" >/dev/null
log="$WORK/straight/metrics.jsonl"
skipped="$(grep -c '"skipped":true' "$log")"
[ "$skipped" -ge 1 ] || fail "an overflowing loss scale should skip steps; none were skipped"
first_scale="$(grep -o '"loss_scale":[^,}]*' "$log" | sed -n 1p | cut -d: -f2)"
last_scale="$(grep -o '"loss_scale":[^,}]*' "$log" | tail -1 | cut -d: -f2)"
awk -v a="$first_scale" -v b="$last_scale" 'BEGIN { exit !(b < a) }' || fail "the loss scale did not back off ($first_scale -> $last_scale)"
grep -q '"skipped":false' "$log" || fail "no step ever ran"
first="$(grep '"skipped":false' "$log" | sed -n 1p | grep -o '"loss":[^,}]*' | cut -d: -f2)"
last="$(losses "$log" | tail -1 | cut -d: -f2)"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "fp16 training did not reduce the loss ($first -> $last)"
echo "ok: fp16: $skipped overflowing steps skipped, loss scale $first_scale -> $last_scale, loss $first -> $last"

"$FARTHING" train "$RECIPE" "${FP16[@]}" --set "checkpoint.run_dir=$WORK/split" --stop-at 20 >/dev/null
"$FARTHING" train "$RECIPE" "${FP16[@]}" --set "checkpoint.run_dir=$WORK/split" --resume latest >/dev/null
diff <(grep -o '"\(loss\|loss_scale\|skipped\)":[^,}]*' "$log") \
     <(grep -o '"\(loss\|loss_scale\|skipped\)":[^,}]*' "$WORK/split/metrics.jsonl") || fail "fp16 resume differs"
same_checkpoint "$WORK/straight/checkpoints/step_00000040.h5" "$WORK/split/checkpoints/step_00000040.h5"
echo "ok: fp16 with its loss scaler resumes bit for bit"

#!/usr/bin/env bash
# `farthing eval` agrees with the training loss on the same data: with data.eval set
# to the training file and no shuffle, step 1 trains on exactly the first eval micro-batch with
# the initial weights, so its logged loss equals eval's loss of that batch; and the held-out
# loss after training is below the loss before.
source "$(dirname "$0")/train_test_common.sh"

SAME=(--set "data.eval=$WORK/shakespeare_256k.txt" --set data.shuffle=false)
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${SAME[@]}" --set "checkpoint.run_dir=$WORK/run" >/dev/null
step1="$(losses "$WORK/run/metrics.jsonl" | sed -n 1p | cut -d: -f2)"
out="$("$FARTHING" eval "$RECIPE" "${SMALL[@]}" "${SAME[@]}" --set "checkpoint.run_dir=$WORK/run" --batches 1)"
eval1="$(awk '{ print $2 }' <<<"$out")"
awk -v a="$step1" -v b="$eval1" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * a) }' \
  || fail "eval loss $eval1 != step-1 training loss $step1 on the same batch"
echo "ok: eval on the first batch $eval1 == training loss at step 1 $step1"

before="$(grep '"eval_loss"' "$WORK/run/metrics.jsonl" | sed -n 1p | grep -o '"eval_loss":[^,}]*' | cut -d: -f2)"
after="$("$FARTHING" eval "$RECIPE" "${SMALL[@]}" "${SAME[@]}" --set "checkpoint.run_dir=$WORK/run" --checkpoint latest \
  | awk '{ print $2 }')"
awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a) }' || fail "eval loss did not drop: $before -> $after"
echo "ok: held-out loss $before -> $after after 6 steps"

#!/usr/bin/env bash
# Crash safety through the CLI: a training process killed (SIGKILL) in the middle of
# a save leaves the previous checkpoint complete and `latest` pointing at it, and the run
# resumes from it to the same result as an uninterrupted run. A truncated or bit-flipped
# checkpoint is refused with a message naming the file or the damaged dataset.
source "$(dirname "$0")/train_test_common.sh"

"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/straight" >/dev/null
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/crash" --stop-at 3 >/dev/null

# Resume; the save at step 6 is killed after its 5th tensor write.
rc=0
FARTHING_CKPT_TEST_KILL_AFTER=5 "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/crash" \
  --resume latest >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 137 ] || fail "the killed save should end with SIGKILL (137), got $rc"
[ "$(cat "$WORK/crash/checkpoints/latest")" = "step_00000003.h5" ] || fail "latest moved off step 3 after a killed save"
[ ! -e "$WORK/crash/checkpoints/step_00000006.h5" ] || fail "a half-written step 6 checkpoint took the final name"
ls -A "$WORK/crash/checkpoints" | grep -q '^\.step_00000006\.h5\.tmp$' || fail "expected the interrupted save's temporary file"
echo "ok: a save killed mid-way left latest -> step_00000003.h5"

# The previous checkpoint is intact: resuming from it reaches the uninterrupted run's state.
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/crash" --resume latest >/dev/null
same_checkpoint "$WORK/straight/checkpoints/step_00000006.h5" "$WORK/crash/checkpoints/step_00000006.h5"
diff <(losses "$WORK/straight/metrics.jsonl") <(losses "$WORK/crash/metrics.jsonl") || fail "losses differ after the crash"
ls -A "$WORK/crash/checkpoints" | grep -q '\.tmp$' && fail "the stale temporary file was not pruned"
echo "ok: resumed after the crash to the uninterrupted result"

# A truncated checkpoint is refused, naming the file.
ckpt="$WORK/straight/checkpoints/step_00000006.h5"
cp "$ckpt" "$WORK/truncated.h5"
truncate -s $(( $(stat -c %s "$ckpt") / 2 )) "$WORK/truncated.h5"
expect_error "truncated checkpoint" "truncated.h5" -- \
  "$FARTHING" eval "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/straight" --checkpoint "$WORK/truncated.h5"

# A flipped byte inside one dataset's data is caught by its checksum, naming that dataset.
dataset="model/model.layers.2.mlp.down_proj.weight"
offset="$(h5dump -p -H -d "$dataset" "$ckpt" | awk '/OFFSET/ { print $2; exit }')"
[ -n "$offset" ] || fail "could not find the file offset of $dataset"
cp "$ckpt" "$WORK/flipped.h5"
byte="$(od -An -tu1 -j $((offset + 100)) -N1 "$WORK/flipped.h5" | tr -d ' ')"
printf "$(printf '\\%03o' $(( byte ^ 16 )))" | dd of="$WORK/flipped.h5" bs=1 seek=$((offset + 100)) conv=notrunc status=none
expect_error "bit-flipped checkpoint" "flipped.h5" "$dataset" -- \
  "$FARTHING" eval "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/straight" --checkpoint "$WORK/flipped.h5"

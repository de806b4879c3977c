#!/usr/bin/env bash
# Graceful preemption and one writer per run directory, through the CLI:
#  - SIGTERM or SIGUSR1 makes the run finish its step, save, and exit 75; resuming with
#    --resume latest reaches the uninterrupted run's checkpoint bit for bit;
#  - a second signal exits at once (128 + signal) and leaves the previous checkpoint and latest;
#  - under mpirun a signal to one rank (the last) stops both ranks after the same step;
#  - a real `kill -USR1` to a running process (not the test hook), while that process is also
#    shown to refuse a second `farthing train` on its run_dir (naming its pid and host) and to let
#    eval and inspect read meanwhile; a crash's leftover lock file does not block the next run.
source "$(dirname "$0")/train_test_common.sh"

# How a command ended: its exit status, its output kept in $WORK/out.txt.
status_of() {
  local rc=0
  "$@" >"$WORK/out.txt" 2>&1 || rc=$?
  echo "$rc"
}
latest_of() { cat "$1/checkpoints/latest"; }
metric_lines() { grep -c '"loss"' "$1/metrics.jsonl" || true; }
# Waits (up to 60 s) until a background run PID has a checkpoint in RUN_DIR; fails if it ends first.
wait_for_checkpoint() {
  local pid="$1" run_dir="$2" out="$3"
  for _ in $(seq 600); do
    [ -f "$run_dir/checkpoints/latest" ] && [ "$(metric_lines "$run_dir")" -ge 2 ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the long run ended early: $(cat "$out")"
    sleep 0.1
  done
  fail "the long run wrote no checkpoint within 60 s"
}
# Sends SIGUSR1 to PID, which must exit 75 having saved the step it names; sets $stopped to that
# step (no subshell: only this shell can wait for its child).
stop_with_usr1() {
  local pid="$1" run_dir="$2" out="$3" rc=0
  if ! kill -USR1 "$pid" 2>/dev/null; then
    wait "$pid" || rc=$?
    fail "kill -USR1: the run had already ended (exit $rc); output: $(cat "$out")"
  fi
  wait "$pid" || rc=$?
  [ "$rc" -eq 75 ] || fail "kill -USR1: exit $rc, expected 75; output: $(cat "$out")"
  stopped="$(grep -o 'stopped by SIGUSR1 after step [0-9]*' "$out" | grep -o '[0-9]*$')"
  [ -n "$stopped" ] || fail "kill -USR1: no stop message: $(cat "$out")"
  [ "$(latest_of "$run_dir")" = "$(printf 'step_%08d.h5' "$stopped")" ] || fail "kill -USR1: latest is not step $stopped"
}

"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/straight" >/dev/null

# 1. SIGTERM after step 3 (the hook raises the real signal in the process at a known step).
rc="$(FARTHING_TRAIN_TEST_SIGNAL=3:TERM status_of "$FARTHING" train "$RECIPE" "${SMALL[@]}" \
  --set "checkpoint.run_dir=$WORK/term")"
[ "$rc" -eq 75 ] || fail "SIGTERM: exit $rc, expected 75; output: $(cat "$WORK/out.txt")"
grep -q "stopped by SIGTERM after step 3 of 6" "$WORK/out.txt" || fail "SIGTERM: no stop message: $(cat "$WORK/out.txt")"
grep -q -- "--resume latest" "$WORK/out.txt" || fail "SIGTERM: the message does not say how to continue"
[ "$(latest_of "$WORK/term")" = "step_00000003.h5" ] || fail "SIGTERM: latest is $(latest_of "$WORK/term"), expected step 3"
[ "$(metric_lines "$WORK/term")" -eq 3 ] || fail "SIGTERM: $(metric_lines "$WORK/term") steps logged, expected 3"
[ ! -e "$WORK/term/train.lock" ] || fail "SIGTERM: the run left its lock file behind"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/term" --resume latest >/dev/null
same_checkpoint "$WORK/straight/checkpoints/step_00000006.h5" "$WORK/term/checkpoints/step_00000006.h5"
diff <(losses "$WORK/straight/metrics.jsonl") <(losses "$WORK/term/metrics.jsonl") >/dev/null \
  || fail "SIGTERM: losses after resume differ from the uninterrupted run"
echo "ok: SIGTERM after step 3 -> exit 75, checkpoint at 3, resumed to the uninterrupted result"

# 2. SIGUSR1 at a step that was just saved (save_every 2): one save, not two. The requeue form
#    --resume auto starts fresh in an empty run_dir and continues from latest after.
rc="$(FARTHING_TRAIN_TEST_SIGNAL=2:USR1 status_of "$FARTHING" train "$RECIPE" "${SMALL[@]}" \
  --set checkpoint.save_every=2 --set "checkpoint.run_dir=$WORK/usr1" --resume auto)"
[ "$rc" -eq 75 ] || fail "SIGUSR1: exit $rc, expected 75; output: $(cat "$WORK/out.txt")"
grep -q "stopped by SIGUSR1 after step 2 of 6" "$WORK/out.txt" || fail "SIGUSR1: no stop message: $(cat "$WORK/out.txt")"
[ "$(latest_of "$WORK/usr1")" = "step_00000002.h5" ] || fail "SIGUSR1: latest is $(latest_of "$WORK/usr1")"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set checkpoint.save_every=2 --set "checkpoint.run_dir=$WORK/usr1" \
  --resume auto >/dev/null
same_checkpoint "$WORK/straight/checkpoints/step_00000006.h5" "$WORK/usr1/checkpoints/step_00000006.h5"
echo "ok: SIGUSR1 after a periodic save -> exit 75, latest step 2; --resume auto continued it bit for bit"

# 3. Two signals after step 3, with a checkpoint at step 2: out at once, step 2 untouched.
rc="$(FARTHING_TRAIN_TEST_SIGNAL=3:TERM:2 status_of "$FARTHING" train "$RECIPE" "${SMALL[@]}" \
  --set checkpoint.save_every=2 --set "checkpoint.run_dir=$WORK/twice")"
[ "$rc" -eq 143 ] || fail "two signals: exit $rc, expected 143 (128 + SIGTERM); output: $(cat "$WORK/out.txt")"
grep -q "second stop signal" "$WORK/out.txt" || fail "two signals: no message: $(cat "$WORK/out.txt")"
[ "$(latest_of "$WORK/twice")" = "step_00000002.h5" ] || fail "two signals: latest is $(latest_of "$WORK/twice")"
[ ! -e "$WORK/twice/checkpoints/step_00000003.h5" ] || fail "two signals: a step 3 checkpoint was written"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set checkpoint.save_every=2 --set "checkpoint.run_dir=$WORK/twice" \
  --resume latest >/dev/null
same_checkpoint "$WORK/straight/checkpoints/step_00000006.h5" "$WORK/twice/checkpoints/step_00000006.h5"
echo "ok: a second signal -> exit 143 at once, latest still step 2, resumed to the uninterrupted result"

# 4. Under mpirun, SIGUSR1 reaches rank 1 only: both ranks stop after step 3 with one checkpoint.
if command -v mpirun >/dev/null; then
  MPI=(mpirun --oversubscribe -np 2 -x FARTHING_TRAIN_TEST_SIGNAL=3:USR1
       -x FARTHING_TRAIN_TEST_SIGNAL_RANK=1)
  rc="$(status_of "${MPI[@]}" "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/mpi")"
  [ "$rc" -eq 75 ] || fail "np 2, signal on rank 1: exit $rc, expected 75; output: $(cat "$WORK/out.txt")"
  grep -q "stopped by SIGUSR1 after step 3 of 6" "$WORK/out.txt" || fail "np 2: no stop message: $(cat "$WORK/out.txt")"
  [ "$(latest_of "$WORK/mpi")" = "step_00000003.h5" ] || fail "np 2: latest is $(latest_of "$WORK/mpi")"
  mpirun --oversubscribe -np 2 "$FARTHING" train "$RECIPE" "${SMALL[@]}" \
    --set "checkpoint.run_dir=$WORK/mpi" --resume latest >/dev/null
  # np 2 with one micro-batch each equals np 1 with two: compare with a straight np 1 run.
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.grad_accum=2 --set "checkpoint.run_dir=$WORK/straight2" >/dev/null
  same_checkpoint "$WORK/straight2/checkpoints/step_00000006.h5" "$WORK/mpi/checkpoints/step_00000006.h5"
  echo "ok: np 2, SIGUSR1 to rank 1 -> both ranks stopped after step 3; resumed bit for bit"

  # A real SIGUSR1 to mpirun itself, which forwards it to every rank.
  mpirun --oversubscribe -np 2 "$FARTHING" train "$RECIPE" "${SMALL[@]}" \
    --set train.steps=100000 --set checkpoint.save_every=1 --set "checkpoint.run_dir=$WORK/mpilive" \
    >"$WORK/mpilive.out" 2>&1 &
  mpirun_pid=$!
  wait_for_checkpoint "$mpirun_pid" "$WORK/mpilive" "$WORK/mpilive.out"
  stop_with_usr1 "$mpirun_pid" "$WORK/mpilive" "$WORK/mpilive.out"
  echo "ok: np 2, kill -USR1 to mpirun -> exit 75 after step $stopped with its checkpoint"
fi

# 5. A real signal to a running process, which meanwhile holds its run_dir against a second writer.
# keep_last 0: the readers below open checkpoints that a pruning run could delete first.
LONG=(--set train.steps=100000 --set checkpoint.save_every=1 --set checkpoint.keep_last=0)
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${LONG[@]}" --set "checkpoint.run_dir=$WORK/live" >"$WORK/live.out" 2>&1 &
pid=$!
wait_for_checkpoint "$pid" "$WORK/live" "$WORK/live.out"
grep -q "^pid $pid on host $(hostname) since " "$WORK/live/train.lock" \
  || fail "train.lock does not name the running pid $pid: $(cat "$WORK/live/train.lock")"
expect_error "a second train on a run_dir in use" "is in use by another farthing train" "pid $pid on host" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${LONG[@]}" --set "checkpoint.run_dir=$WORK/live" --resume latest
"$FARTHING" eval "$RECIPE" "${SMALL[@]}" "${LONG[@]}" --set "checkpoint.run_dir=$WORK/live" --checkpoint latest \
  >/dev/null || fail "eval could not read the run_dir while training ran"
"$FARTHING" inspect "$WORK/live/checkpoints/$(latest_of "$WORK/live")" >"$WORK/inspect.out" 2>&1 \
  || fail "inspect could not read a checkpoint while training ran: $(cat "$WORK/inspect.out")"
echo "ok: while training, a second train is refused naming pid $pid; eval and inspect read meanwhile"
stop_with_usr1 "$pid" "$WORK/live" "$WORK/live.out"
# Resume for two more steps; a fresh run stopped at the same step must agree bit for bit.
target=$((stopped + 2))
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${LONG[@]}" --set "checkpoint.run_dir=$WORK/live" --resume latest \
  --stop-at "$target" >/dev/null
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${LONG[@]}" --set "checkpoint.run_dir=$WORK/live_ref" \
  --stop-at "$target" >/dev/null
same_checkpoint "$WORK/live_ref/checkpoints/$(printf 'step_%08d.h5' "$target")" \
  "$WORK/live/checkpoints/$(printf 'step_%08d.h5' "$target")"
echo "ok: kill -USR1 at step $stopped -> exit 75; resumed to step $target bit for bit"

# 6. A killed run (SIGKILL: no clean end) leaves its lock line; the next run takes over and says so.
rc=0
FARTHING_CKPT_TEST_KILL_AFTER=5 "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/killed" \
  >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 137 ] || fail "the killed run should end with SIGKILL (137), got $rc"
grep -q "^pid [0-9]* on host" "$WORK/killed/train.lock" || fail "the killed run left no lock line to detect"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/killed" --set train.steps=6 \
  --set checkpoint.save_every=0 >"$WORK/out.txt" 2>&1 || fail "a run after a crash was refused: $(cat "$WORK/out.txt")"
grep -q "took over .*train.lock from a run that did not end cleanly (pid " "$WORK/out.txt" \
  || fail "the stale lock was not reported: $(cat "$WORK/out.txt")"
[ ! -e "$WORK/killed/train.lock" ] || fail "the run after the crash left its lock file behind"
echo "ok: the lock file of a killed run does not block the next run, which reports it"

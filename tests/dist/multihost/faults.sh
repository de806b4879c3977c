# faults.sh — helpers of test_multihost.sh's fault runs (sourced after hosts.sh).
# The long runs: 100000 planned steps (the schedule's length), one micro-batch per rank, ZeRO-3.
# A reference run with the same plan stopped at step T is the uninterrupted result at T.
LONG=("${SMALL[@]}" --set train.steps=100000 --set train.micro_batch=1 --set distributed.zero_stage=3
      --set checkpoint.keep_last=0 --set "distributed.collective_timeout_s=$COLLECTIVE_TIMEOUT_S")
latest_step() { sed 's/^step_0*\([0-9][0-9]*\)\.h5$/\1/' "$1/checkpoints/latest"; }
metric_lines() { if [ -f "$1/metrics.jsonl" ]; then grep -c '"loss"' "$1/metrics.jsonl" || true; else echo 0; fi; }
# PIDs of the farthing processes in a host's namespace.
farthing_pids_on() {
  local p
  for p in $(ip netns pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = farthing ] && echo "$p"; done
  return 0
}
# Waits (up to 120 s) until the background job PID has logged N steps in RUN_DIR.
wait_for_steps() {
  local pid="$1" run_dir="$2" n="$3" out="$4" i
  for i in $(seq 1200); do
    [ "$(metric_lines "$run_dir")" -ge "$n" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the long run ended early: $(cat "$out")"
    sleep 0.1
  done
  fail "the long run logged no $n steps within 120 s"
}
# Waits up to SECONDS for the background job PID to end; sets $rc to its status. Fails (after
# killing what is left) if it has not ended by then.
wait_bounded() {
  local pid="$1" seconds="$2" what="$3" i
  for i in $(seq $((seconds * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" $(farthing_pids_on "$MH_NS_A") $(farthing_pids_on "$MH_NS_B") 2>/dev/null || true
    fail "$what: the job was still running ${seconds} s later"
  fi
  rc=0
  wait "$pid" || rc=$?
}
# The checkpoint a run stopped at step T (one plan, one world) ends with, made once per T.
reference_at() {
  local t="$1" dir="$WORK/ref-$1"
  [ -f "$(ckpt "$dir" "$t")" ] || mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" \
    --set "checkpoint.run_dir=$dir" --stop-at "$t" >/dev/null
  ckpt "$dir" "$t"
}
# After a fault: latest names a checkpoint that exists and reads back (farthing inspect checks its
# checksums), and --resume latest for two more steps reaches the uninterrupted run bit for bit.
check_intact_and_resume() {
  local run_dir="$1" what="$2" last target
  last="$(latest_step "$run_dir")"
  "$FARTHING" inspect "$(ckpt "$run_dir" "$last")" >"$WORK/inspect.out" 2>&1 \
    || fail "$what: latest (step $last) does not read back: $(cat "$WORK/inspect.out")"
  target=$((last + 2))
  mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set "checkpoint.run_dir=$run_dir" \
    --resume latest --stop-at "$target" >/dev/null
  same_checkpoint "$(reference_at "$target")" "$(ckpt "$run_dir" "$target")"
  resumed="latest step $last intact; resumed to step $target bit for bit"
}

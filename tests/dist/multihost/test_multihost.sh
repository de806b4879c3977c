#!/usr/bin/env bash
# test_multihost.sh — farthing under mpirun across two hosts. Each host is a network
# namespace (hosts.sh); the ranks talk TCP over a veth pair, as ranks on separate nodes do, with
# no shared memory between any two of them. Arguments: $1 farthing  $2 ../shared  $3 source dir.
#  - parity: ZeRO-1, 2 and 3 at np 4 (2 ranks per host) == np 1 with grad_accum 4 (the same
#    global batch, the same rank-order sums): losses as text and the step-5 checkpoint (h5diff);
#  - resharded resume: a checkpoint written at np 4 by the ranks of both hosts into one run
#    directory loads at np 2 (one host) and np 3 (two hosts) with byte-identical state, and
#    continues there; np 1 (grad_accum 4) continues bit for bit;
#  - faults: (a) host b's farthing processes killed mid-step, (a') the same under a launcher that
#    keeps the job (only distributed.collective_timeout_s ends it), (b) a host-b rank killed
#    during a save, (c) a lossy, delayed link (tap_wire.py), (e) host b's link cut during a save
#    (only checkpoint.save_timeout_s ends it), (d) SIGUSR1 to mpirun. Each fault
#    leaves latest and the previous checkpoint intact and --resume latest reaches the
#    uninterrupted run's checkpoint bit for bit.
# Skips (77) without stories260K, root or network namespaces.
source "$(dirname "$0")/../../train/loop/train_test_common.sh"
source "$(dirname "$0")/hosts.sh"
# No thread pin: np 1 runs on every core, each rank on its share (the bits do not depend on it).
unset OMP_NUM_THREADS
trap 'mh_teardown; rm -rf "$WORK"' EXIT
mh_setup
mh_hostfile "$WORK/hosts-2+2" 2 2
mh_hostfile "$WORK/hosts-2+1" 2 1
mh_hostfile "$WORK/hosts-2" 2 0
step_file() { printf 'step_%08d.h5' "$1"; }
ckpt() { echo "$1/checkpoints/$(step_file "$2")"; }
seconds_since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }'; }

# 1. Parity: 8-bit AdamW + SR, one micro-batch of 2 per rank; np 1 runs the 4 micro-batches.
CFG=("${SMALL[@]}" --set train.steps=5 --set train.micro_batch=2 --set optimizer.state=8bit
     --set optimizer.master=none --set optimizer.weight_rounding=stochastic --set optimizer.embedding_f32_state=false)
"$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.grad_accum=4 --set "checkpoint.run_dir=$WORK/np1" >/dev/null
for stage in 1 2 3; do
  t0=$(date +%s.%N)
  mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${CFG[@]}" --set distributed.zero_stage=$stage \
    --set train.grad_accum=1 --set "checkpoint.run_dir=$WORK/s$stage-np4" >/dev/null
  diff <(losses "$WORK/np1/metrics.jsonl") <(losses "$WORK/s$stage-np4/metrics.jsonl") \
    || fail "ZeRO-$stage np 4 over two hosts: losses differ from np 1"
  same_checkpoint "$(ckpt "$WORK/np1" 5)" "$(ckpt "$WORK/s$stage-np4" 5)"
  echo "ok: ZeRO-$stage np 4 (2 on $MH_HOST_A + 2 on $MH_HOST_B) == np 1 bit for bit (5 losses, checkpoint) in $(seconds_since "$t0") s"
done

# 2. Resharded resume: 12 sequences per step (np 4 x 3, np 2 x 3 x 2 micro-batches, np 3 x 4,
#    np 1 x 3 x 4). Saved at step 3 of 6 by the four ranks of both hosts into one run directory.
R=("${SMALL[@]}" --set train.steps=6 --set train.micro_batch=3 --set optimizer.state=8bit
   --set optimizer.master=f32 --set optimizer.weight_rounding=stochastic --set distributed.zero_stage=3)
mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${R[@]}" --set "checkpoint.run_dir=$WORK/r-np4" >/dev/null
mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${R[@]}" --set "checkpoint.run_dir=$WORK/r-saved" --stop-at 3 >/dev/null
saved="$(ckpt "$WORK/r-saved" 3)"
# HOSTFILE NP MICRO_BATCH GRAD_ACCUM NAME: each resumed world.
resumed_worlds=("hosts-2 2 3 2 np2-one-host" "hosts-2+1 3 4 1 np3-two-hosts")
for world in "${resumed_worlds[@]}"; do
  read -r hosts np mb accum name <<<"$world"
  # Loaded at another world size and saved again without a step: the same bytes in every dataset.
  mh_mpirun "$WORK/$hosts" "$np" "$FARTHING" train "$RECIPE" "${R[@]}" --set train.micro_batch=$mb \
    --set train.grad_accum=$accum --set "checkpoint.run_dir=$WORK/r-$name" --resume "$saved" --stop-at 3 >/dev/null
  same_checkpoint "$saved" "$(ckpt "$WORK/r-$name" 3)"
  mh_mpirun "$WORK/$hosts" "$np" "$FARTHING" train "$RECIPE" "${R[@]}" --set train.micro_batch=$mb \
    --set train.grad_accum=$accum --set "checkpoint.run_dir=$WORK/r-$name" --resume latest >/dev/null
  # Its steps sum the 12 sequences' gradients in another association ((g0+g1)+(g2+g3) at np 2,
  # micro-batches of 4 at np 3) than np 4's ((g0+g1)+g2)+g3: equal only to rounding.
  paste <(losses "$WORK/r-np4/metrics.jsonl" | tail -3 | cut -d: -f2) <(losses "$WORK/r-$name/metrics.jsonl" | tail -3 | cut -d: -f2) \
    | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-3 * $1) bad = 1; n++ } END { exit bad || n != 3 }' \
    || fail "np 4 -> $name resume left the np 4 loss curve (tolerance 1e-3 relative)"
  if diff -q <(losses "$WORK/r-np4/metrics.jsonl" | tail -3) <(losses "$WORK/r-$name/metrics.jsonl" | tail -3) >/dev/null; then
    same_losses="3 losses identical as text, moments equal to rounding"; else same_losses="3 losses within 1e-3"; fi
  echo "ok: np 4 (two hosts) -> $name: loaded byte-identical, continued to step 6 ($same_losses)"
done
# np 1 adds the four micro-batches in np 4's rank order: bit for bit.
"$FARTHING" train "$RECIPE" "${R[@]}" --set train.grad_accum=4 --set "checkpoint.run_dir=$WORK/r-np1" --resume "$saved" >/dev/null
diff <(losses "$WORK/r-np4/metrics.jsonl" | tail -3) <(losses "$WORK/r-np1/metrics.jsonl" | tail -3) \
  || fail "np 4 -> np 1 resume left the np 4 loss curve"
same_checkpoint "$(ckpt "$WORK/r-np4" 6)" "$(ckpt "$WORK/r-np1" 6)"
echo "ok: np 4 (two hosts) -> np 1: continued bit for bit (losses, step-6 checkpoint)"

# 3. Faults. The job must end within the collective bound of the loss (30 s here).
COLLECTIVE_TIMEOUT_S=30
source "$(dirname "$0")/faults.sh"

# (a) Host b lost mid-step: every farthing process in its namespace SIGKILLed while the ranks
#     train (each step is a chain of collectives). Open MPI's daemon on host b reports the deaths;
#     mpirun ends the job and names a lost rank.
mh_mpirun_command "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=2 \
  --set "checkpoint.run_dir=$WORK/lost"
"${MH_COMMAND[@]}" >"$WORK/lost.out" 2>&1 &
job=$!
wait_for_steps "$job" "$WORK/lost" 5 "$WORK/lost.out"
t0=$(date +%s.%N)
kill -9 $(farthing_pids_on "$MH_NS_B")
wait_bounded "$job" "$COLLECTIVE_TIMEOUT_S" "(a) host b lost"
took=$(seconds_since "$t0")
[ "$rc" -ne 0 ] || fail "(a) host b lost: the job exited 0"
[ -z "$(farthing_pids_on "$MH_NS_A")" ] || fail "(a) host b lost: ranks on host a still run"
lost_line="$(grep -E "process rank [23] with PID [0-9]+ on node $MH_HOST_B exited on signal 9" "$WORK/lost.out" | head -1)" \
  || fail "(a) host b lost: no line names a lost rank: $(cat "$WORK/lost.out")"
[ -f "$(ckpt "$WORK/lost" $(( $(latest_step "$WORK/lost") - 2 )))" ] || fail "(a) the checkpoint before latest is gone"
check_intact_and_resume "$WORK/lost" "(a) host b lost"
echo "ok (a): host b's ranks killed mid-step -> exit $rc in $took s (bound $COLLECTIVE_TIMEOUT_S s): '$lost_line'; $resumed"

# (a') The same loss under a launcher that keeps the job going (mpirun --enable-recovery, as a
#      launcher that does not tear the job down when one node's processes die): nothing but
#      farthing's own bound ends the survivors. Their next collective waits 10 s, then a rank on
#      host a names it and aborts. With distributed.collective_timeout_s 0 they were still
#      waiting 40 s later (the guard check).
# Each rank's own exit status goes to kept.rc.RANK (the launcher's status says nothing here).
mh_mpirun_command "$WORK/hosts-2+2" 4 --enable-recovery \
  /bin/sh -c '"$0" "$@"; echo $? >"'"$WORK"'/kept.rc.$OMPI_COMM_WORLD_RANK"' "$FARTHING" train "$RECIPE" "${LONG[@]}" \
  --set distributed.collective_timeout_s=${MH_RECOVERY_TIMEOUT_S:-10} --set "checkpoint.run_dir=$WORK/kept"
"${MH_COMMAND[@]}" >"$WORK/kept.out" 2>&1 &
job=$!
wait_for_steps "$job" "$WORK/kept" 5 "$WORK/kept.out"
t0=$(date +%s.%N)
kill -9 $(farthing_pids_on "$MH_NS_B")
for _ in $(seq 250); do [ -z "$(farthing_pids_on "$MH_NS_A")" ] && break; sleep 0.1; done  # 25 s
took=$(seconds_since "$t0")
survivors="$(farthing_pids_on "$MH_NS_A")"
[ -z "$survivors" ] || { kill -9 "$job" $survivors 2>/dev/null; fail "(a') host a's ranks ($survivors) still ran 25 s after host b was lost"; }
wait_bounded "$job" 30 "(a') the launcher after its ranks ended"
timeout_line="$(grep -E "error on rank [01] of 4: [a-z_]+ of [0-9]+ [a-z0-9]+ \(collective #[0-9]+ of this communicator\) has not finished after 10 s" "$WORK/kept.out" | head -1)" \
  || fail "(a') no survivor named the collective it waited for: $(cat "$WORK/kept.out")"
# The lost ranks named, not only the waiting one (the communicator's roll call).
grep -q "ranks 2, 3 did not arrive" <<<"$timeout_line" || fail "(a') the timeout line does not name lost ranks 2, 3: '$timeout_line'"
for r in 0 1; do
  [ -f "$WORK/kept.rc.$r" ] && [ "$(cat "$WORK/kept.rc.$r")" -ne 0 ] || fail "(a') rank $r (host a) did not exit non-zero: $(cat "$WORK/kept.rc.$r" 2>/dev/null)"
done
echo "ok (a'): host b lost, launcher keeping the job: host a's ranks exited $(cat "$WORK/kept.rc.0"), $(cat "$WORK/kept.rc.1") in $took s (mpirun: $rc): '$timeout_line'"

# (b) Host b lost during a save: rank 2 (host b's first) SIGKILLs itself after its third tensor
#     of the step-4 save (FARTHING_CKPT_TEST_KILL_AFTER); step 2 is the previous checkpoint.
mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=2 \
  --set "checkpoint.run_dir=$WORK/save-lost" --stop-at 2 >/dev/null
t0=$(date +%s.%N)
MH_EXPORT="FARTHING_CKPT_TEST_KILL_AFTER FARTHING_CKPT_TEST_KILL_RANK" \
  mh_mpirun_command "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=2 \
  --set "checkpoint.run_dir=$WORK/save-lost" --resume latest
FARTHING_CKPT_TEST_KILL_AFTER=3 FARTHING_CKPT_TEST_KILL_RANK=2 "${MH_COMMAND[@]}" >"$WORK/save-lost.out" 2>&1 &
job=$!
wait_bounded "$job" 120 "(b) host b lost during a save"  # the bound: 2 steps, then the save's collectives
took=$(seconds_since "$t0")
[ "$rc" -ne 0 ] || fail "(b) lost during a save: the job exited 0"
lost_line="$(grep -E "process rank 2 with PID [0-9]+ on node $MH_HOST_B exited on signal 9" "$WORK/save-lost.out" | head -1)" \
  || fail "(b) lost during a save: no line names rank 2: $(cat "$WORK/save-lost.out")"
[ "$(latest_step "$WORK/save-lost")" = 2 ] || fail "(b) latest moved to step $(latest_step "$WORK/save-lost")"
[ ! -e "$(ckpt "$WORK/save-lost" 4)" ] || fail "(b) a step-4 checkpoint was committed"
check_intact_and_resume "$WORK/save-lost" "(b) lost during a save"
echo "ok (b): rank 2 killed in the step-4 save -> exit $rc in $took s: '$lost_line'; $resumed"

# (c) A lossy, slow link (tap_wire.py: 20 ms each way, 1% of the frames dropped each way) must
#     not change a bit: ZeRO-3 at np 4 == the clean np 1 run (losses, step-5 checkpoint).
mh_use_wire 20 0.01 0
t0=$(date +%s.%N)
mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${CFG[@]}" --set distributed.zero_stage=3 \
  --set train.grad_accum=1 --set "checkpoint.run_dir=$WORK/lossy" >/dev/null
took=$(seconds_since "$t0")
mh_use_veth
diff <(losses "$WORK/np1/metrics.jsonl") <(losses "$WORK/lossy/metrics.jsonl") || fail "(c) losses differ over the lossy link"
same_checkpoint "$(ckpt "$WORK/np1" 5)" "$(ckpt "$WORK/lossy" 5)"
lost="$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(sum(w["dropped_loss"] for w in s.values()), "of", sum(w["read"] for w in s.values()))' "$MH_WIRE_STATS")"
[ "${lost%% *}" -gt 0 ] || fail "(c) the wire dropped no frame ($lost): the case did not test a lossy link"
# The median of the 5 steps' step_seconds, over the wire and over the veth (parity's ZeRO-3 run).
median_step() { grep -o '"step_seconds":[^,}]*' "$1/metrics.jsonl" | cut -d: -f2 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "ok (c): 20 ms each way + 1% loss ($lost frames dropped): bit-identical to the clean run; 5 steps (with start-up) in $took s, median step $(median_step "$WORK/lossy") s (veth: $(median_step "$WORK/s3-np4") s)"

# (e) Host b goes silent during a save: its link is cut (the wire stops forwarding) while the
#     step-4 save runs. Its MPI-IO is outside the collective bound (set to 300 s here), so only
#     checkpoint.save_timeout_s (15 s) ends host a's ranks: within 15 + 30 s of the cut, with a
#     line naming the save, the step and ranks 2, 3. A 5 ms wire makes the save's many round
#     trips last long enough to cut it mid-way. Step 2 is the previous checkpoint.
SAVE_TIMEOUT_S=${MH_SAVE_TIMEOUT_S:-15}
mh_mpirun "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=2 \
  --set "checkpoint.run_dir=$WORK/silent" --stop-at 2 >/dev/null
mh_use_wire 5 0 0
mh_mpirun_command "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=2 \
  --set distributed.collective_timeout_s=300 --set checkpoint.save_timeout_s=$SAVE_TIMEOUT_S \
  --set "checkpoint.run_dir=$WORK/silent" --resume latest
"${MH_COMMAND[@]}" >"$WORK/silent.out" 2>&1 &
job=$!
saving="$WORK/silent/checkpoints/.$(step_file 4).tmp"
for _ in $(seq 2400); do [ -e "$saving" ] && break; kill -0 "$job" 2>/dev/null || break; sleep 0.05; done  # 120 s
[ -e "$saving" ] || { kill -9 "$job" 2>/dev/null; fail "(e) the step-4 save did not start within 120 s: $(cat "$WORK/silent.out")"; }
kill -USR1 "$MH_WIRE_PID"
t0=$(date +%s.%N)
bound=$((SAVE_TIMEOUT_S + 30))
for _ in $(seq $((bound * 10))); do [ -z "$(farthing_pids_on "$MH_NS_A")" ] && break; sleep 0.1; done
took=$(seconds_since "$t0")
survivors="$(farthing_pids_on "$MH_NS_A" | tr '\n' ' ')"
# Host b's side is cut off: its ranks and mpirun's daemon there are ended by hand, then the link
# mends so that mpirun can finish.
kill -9 $survivors $(farthing_pids_on "$MH_NS_B") 2>/dev/null || true
kill -USR2 "$MH_WIRE_PID"
wait_bounded "$job" 120 "(e) mpirun after the silent save"
[ -z "$survivors" ] || fail "(e) host a's ranks ($survivors) still ran $bound s after host b's link was cut mid-save: $(cat "$WORK/silent.out")"
save_line="$(grep -E "error on rank [01] of 4: the save of the step-4 checkpoint into .* has not finished after $SAVE_TIMEOUT_S s \(checkpoint.save_timeout_s\): ranks 2, 3 did not arrive" "$WORK/silent.out" | head -1)" \
  || fail "(e) no rank on host a named the save, its step and ranks 2, 3: $(cat "$WORK/silent.out")"
[ "$rc" -ne 0 ] || fail "(e) the job exited 0"
mh_use_veth
[ "$(latest_step "$WORK/silent")" = 2 ] || fail "(e) latest moved to step $(latest_step "$WORK/silent")"
[ ! -e "$(ckpt "$WORK/silent" 4)" ] || fail "(e) a step-4 checkpoint was committed"
check_intact_and_resume "$WORK/silent" "(e) silent during a save"
echo "ok (e): host b's link cut mid-save -> host a's ranks ended in $took s (bound $SAVE_TIMEOUT_S + 30 s), exit $rc: '$save_line'; $resumed"

# (d) SIGUSR1 to mpirun (Slurm's --signal=USR1@120 reaches the launcher): mpirun forwards it to
#     every rank on both hosts; they agree on the step, save once and exit 75.
mh_mpirun_command "$WORK/hosts-2+2" 4 "$FARTHING" train "$RECIPE" "${LONG[@]}" --set checkpoint.save_every=0 \
  --set "checkpoint.run_dir=$WORK/usr1"
"${MH_COMMAND[@]}" >"$WORK/usr1.out" 2>&1 &
job=$!
wait_for_steps "$job" "$WORK/usr1" 3 "$WORK/usr1.out"
kill -USR1 "$job"
wait_bounded "$job" "$COLLECTIVE_TIMEOUT_S" "(d) SIGUSR1 to mpirun"
[ "$rc" -eq 75 ] || fail "(d) SIGUSR1 to mpirun: exit $rc, expected 75: $(cat "$WORK/usr1.out")"
stopped="$(grep -o 'stopped by SIGUSR1 after step [0-9]*' "$WORK/usr1.out" | grep -o '[0-9]*$' | sort -u)"
[ "$(wc -w <<<"$stopped")" = 1 ] || fail "(d) no single stop step: '$stopped': $(cat "$WORK/usr1.out")"
[ "$(latest_step "$WORK/usr1")" = "$stopped" ] || fail "(d) latest is not step $stopped"
[ "$(ls "$WORK/usr1/checkpoints" | grep -c '\.h5$')" = 1 ] || fail "(d) not exactly one checkpoint: $(ls "$WORK/usr1/checkpoints")"
check_intact_and_resume "$WORK/usr1" "(d) SIGUSR1"
echo "ok (d): SIGUSR1 to mpirun -> every rank stopped after step $stopped, one checkpoint, exit 75; $resumed"

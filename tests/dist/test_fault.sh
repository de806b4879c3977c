#!/usr/bin/env bash
# test_fault.sh — a rank that throws must bring the whole job down, non-zero, naming the rank.
# Usage: test_fault.sh MPIEXEC NP FAULT_DRIVER [extra mpiexec flags...]
# Control run (no fault) must succeed; then each fault run must exit non-zero with
# "error on rank R of NP" and the injected message on stderr. ctest's TIMEOUT bounds the whole
# script, which is what "promptly" means here: a hang in a collective would exceed it. The
# "pending" mode leaves a collective in flight on the failing rank while its peers sleep 600 s
# before joining it: only an abort that does not wait for it ends the job in time. The "hang"
# mode: a rank stops issuing collectives; its peers' bounded waits end the job. The "watchdog"
# mode: as "hang", but no peer waits; the collective watchdog's thread ends the job.
set -uo pipefail
mpiexec=$1; np=$2; driver=$3; shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if ! "$mpiexec" -n "$np" "$@" "$driver" >"$log" 2>&1; then
  echo "FAIL: the control run without a fault failed:"; cat "$log"; exit 1
fi
grep -q "fault_driver: $np ranks finished" "$log" || { echo "FAIL: control output:"; cat "$log"; exit 1; }

for mode in plain pending; do
for fault_rank in 0 $((np - 1)); do
  if [[ $mode == pending ]]; then export FARTHING_TEST_FAULT_PENDING=1; else unset FARTHING_TEST_FAULT_PENDING; fi
  FARTHING_TEST_FAULT_RANK=$fault_rank "$mpiexec" -x FARTHING_TEST_FAULT_RANK \
    ${FARTHING_TEST_FAULT_PENDING:+-x FARTHING_TEST_FAULT_PENDING} -n "$np" "$@" "$driver" >"$log" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]]; then
    echo "FAIL: fault on rank $fault_rank but the job exited 0:"; cat "$log"; exit 1
  fi
  if ! grep -q "error on rank $fault_rank of $np: injected fault" "$log"; then
    echo "FAIL: no message naming rank $fault_rank (exit $rc):"; cat "$log"; exit 1
  fi
  echo "ok ($mode): fault on rank $fault_rank of $np -> exit $rc, message names the rank"
done
done

# A rank that hangs (sleeps 600 s) before collective #4. Mode "hang": its peers' bounded waits
# (2 s) end the job. Mode "watchdog": no peer waits for the collective, as none waits for an NCCL
# op ordered on the device; they hand it to the collective watchdog (2 s) and go on, and its
# report, from the watchdog's own thread, ends the job. Either way within ctest's TIMEOUT, naming a
# rank that was left waiting and the collective; the hung rank never reports.
unset FARTHING_TEST_FAULT_PENDING
for mode in hang watchdog; do
  mode_var=FARTHING_TEST_FAULT_${mode^^}
  for hung_rank in 0 $((np - 1)); do
    env "$mode_var=1" FARTHING_TEST_FAULT_RANK=$hung_rank "$mpiexec" -x "$mode_var" \
      -x FARTHING_TEST_FAULT_RANK -n "$np" "$@" "$driver" >"$log" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]]; then
      echo "FAIL ($mode): rank $hung_rank hung but the job exited 0:"; cat "$log"; exit 1
    fi
    if ! grep -Eq "error on rank [0-9]+ of $np: all_reduce of 1 f64 \(collective #4 of this communicator\) has not finished after 2 s" "$log"; then
      echo "FAIL ($mode): no timeout message naming a rank and the collective (exit $rc):"; cat "$log"; exit 1
    fi
    # A host wait names the rank it waits for: the hung rank is alive, so it answers the roll
    # call with the 3 collectives it issued (roll_call.h).
    if [[ $mode == hang ]] && ! grep -q "rank $hung_rank did not arrive but answered (collectives issued, of the 4 needed: $hung_rank: 3)" "$log"; then
      echo "FAIL ($mode): the timeout message does not name hung rank $hung_rank:"; cat "$log"; exit 1
    fi
    if grep -q "error on rank $hung_rank of" "$log"; then
      echo "FAIL ($mode): the hung rank $hung_rank reported the timeout itself:"; cat "$log"; exit 1
    fi
    echo "ok ($mode): rank $hung_rank hung -> exit $rc, $(grep -o "error on rank [0-9]* of $np: all_reduce[^:]*" "$log" | head -1)"
  done
done

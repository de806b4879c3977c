#!/usr/bin/env bash
# test_h5_faults.sh — I/O faults during a save: EIO, ENOSPC and a short write injected
# (FARTHING_CKPT_TEST_FAULT, h5_checkpoint_dir.h) at each stage of the save — the first dataset,
# the file attributes, the fsync of the finished file, its rename, the `latest` pointer. Each
# save must fail (exit != 0) with a message naming the stage's file and the fault, and leave
# `latest` naming step 1, which still loads and verifies; the next clean save then succeeds.
# The dataset and attributes stages run at np=1 and, under mpirun, with the fault on the last
# rank only (every rank must fail together, none hang). Usage: test_h5_faults.sh MPIEXEC DRIVER NP [flags...]
set -uo pipefail
mpiexec=$1; driver=$2; np=$3; shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$dir.log"' EXIT
fail() { echo "FAIL: $*"; cat "$dir.log" 2>/dev/null; ls -la "$dir"; exit 1; }

"$driver" write "$dir" 1 >/dev/null || fail "first save"
declare -A expect=([dataset]="writing dataset 'model/wte'" [attributes]="writing the attributes"
                   [fsync]="fsync of" [rename]="cannot rename" [latest]="cannot write")
declare -A text=([EIO]="Input/output error" [ENOSPC]="No space left on device" [short]="short write")
cases=0
for stage in dataset attributes fsync rename latest; do
  for kind in EIO ENOSPC short; do
    launches=(single)
    [[ $stage == dataset || $stage == attributes ]] && launches+=(mpi)
    for launch in "${launches[@]}"; do
      if [[ $launch == single ]]; then
        FARTHING_CKPT_TEST_FAULT=$stage:$kind timeout 120 "$driver" write "$dir" 2 >"$dir.log" 2>&1
      else
        FARTHING_CKPT_TEST_FAULT=$stage:$kind FARTHING_CKPT_TEST_FAULT_RANK=$((np - 1)) timeout 120 \
          "$mpiexec" -x FARTHING_CKPT_TEST_FAULT -x FARTHING_CKPT_TEST_FAULT_RANK -n "$np" "$@" \
          "$driver" write "$dir" 2 >"$dir.log" 2>&1
      fi
      rc=$?
      [[ $rc -ne 0 && $rc -ne 124 ]] || fail "$stage:$kind ($launch): the save exited $rc"
      if [[ $launch == mpi ]] && ! grep -q "${expect[$stage]}" "$dir.log"; then
        # rank 0's "rank N failed" may abort the job before the faulted rank prints its own line
        grep -q "checkpoint write abandoned: rank $((np - 1)) failed" "$dir.log" ||
          fail "$stage:$kind ($launch): neither the fault nor the failing rank is named"
      else
        grep -q "${expect[$stage]}" "$dir.log" || fail "$stage:$kind ($launch): no '${expect[$stage]}' in the message"
        grep -q "${text[$kind]}" "$dir.log" || fail "$stage:$kind ($launch): the message does not say '${text[$kind]}'"
      fi
      [[ $(cat "$dir/latest") == step_00000001.h5 ]] || fail "$stage:$kind ($launch): latest moved to $(cat "$dir/latest")"
      "$driver" check "$dir" 1 >/dev/null 2>&1 || fail "$stage:$kind ($launch): step 1 no longer loads"
      echo "ok $stage:$kind ($launch, exit $rc): $(grep -m1 -o "error.*" "$dir.log" | head -c 160)"
      rm -f "$dir/step_00000002.h5" "$dir/.step_00000002.h5.tmp" "$dir/.latest.tmp"
      cases=$((cases + 1))
    done
  done
done
"$driver" write "$dir" 2 >/dev/null || fail "the clean save after the faults"
[[ $(cat "$dir/latest") == step_00000002.h5 ]] || fail "latest not updated by the clean save"
"$driver" check "$dir" 2 >/dev/null || fail "step 2 does not load"
echo "ok: $cases faulted saves refused cleanly; the clean save after them succeeded"

#!/usr/bin/env bash
# test_h5_crash.sh — a save killed with SIGKILL between dataset writes leaves the previous
# checkpoint loadable and `latest` pointing at it; the interrupted file is refused; the next
# save succeeds and cleans up. Runs at np=1 (no mpirun) and at NP ranks.
# Usage: test_h5_crash.sh MPIEXEC DRIVER NP [mpiexec flags...]
set -uo pipefail
mpiexec=$1; driver=$2; np=$3; shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; ls -la "$dir"; exit 1; }

for launch in single mpi; do
  rm -rf "${dir:?}"/* "$dir"/.[!.]* 2>/dev/null
  if [[ $launch == single ]]; then
    run=("$driver"); kill_run=("$driver"); n=1
  else
    run=("$mpiexec" -n "$np" "$@" "$driver"); n=$np
    kill_run=("$mpiexec" -x FARTHING_CKPT_TEST_KILL_AFTER -x FARTHING_CKPT_TEST_KILL_RANK -n "$np" "$@" "$driver")
  fi
  "${run[@]}" write "$dir" 1 >/dev/null || fail "first save ($launch)"
  # Killed after its 3rd tensor: rank n-1 raises SIGKILL (the launcher then ends the others).
  FARTHING_CKPT_TEST_KILL_AFTER=3 FARTHING_CKPT_TEST_KILL_RANK=$((n - 1)) \
    "${kill_run[@]}" write "$dir" 2 >"$dir.log" 2>&1
  rc=$?
  [[ $rc -ne 0 ]] || fail "the killed save exited 0 ($launch)"
  [[ -f "$dir/.step_00000002.h5.tmp" ]] || fail "no temporary file left by the killed save ($launch)"
  [[ ! -e "$dir/step_00000002.h5" ]] || fail "the killed save produced a final file ($launch)"
  [[ $(cat "$dir/latest") == step_00000001.h5 ]] || fail "latest moved: $(cat "$dir/latest") ($launch)"
  "$driver" check "$dir" 1 >/dev/null || fail "the previous checkpoint no longer loads ($launch)"
  if "$driver" open "$dir/.step_00000002.h5.tmp" >"$dir.log" 2>&1; then
    fail "the interrupted file was accepted ($launch)"
  fi
  grep -q "step_00000002.h5.tmp" "$dir.log" || { cat "$dir.log"; fail "the refusal does not name the file"; }
  echo "ok ($launch, np $n): killed save (exit $rc) left step 1 and latest intact; refused: $(grep -m1 -o 'checkpoint .*' "$dir.log" | head -c 160)"
  "${run[@]}" write "$dir" 2 >/dev/null || fail "the save after the crash ($launch)"
  [[ $(cat "$dir/latest") == step_00000002.h5 ]] || fail "latest not updated after the crash ($launch)"
  [[ ! -e "$dir/.step_00000002.h5.tmp" ]] || fail "temporary file left after a good save ($launch)"
  "$driver" check "$dir" 2 >/dev/null || fail "step 2 does not load ($launch)"
done
# An unwritable folder: a clear error, nothing created. Root ignores permission bits, so as
# root the save runs as user nobody (setpriv) against a root-owned 0755 folder.
locked=$(mktemp -d)
chmod 0755 "$locked"
as_user=()
if [[ $(id -u) -eq 0 ]]; then
  command -v setpriv >/dev/null || { echo "skip: unwritable folder (root without setpriv)"; locked=""; }
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [[ -n $locked ]]; then
  if HOME=/tmp "${as_user[@]}" "$driver" write "$locked" 1 >"$dir.log" 2>&1; then
    rm -rf "$locked"; fail "a save into an unwritable folder succeeded"
  fi
  grep -q "cannot create .*Permission denied" "$dir.log" || { cat "$dir.log"; rm -rf "$locked"; fail "unclear error"; }
  [[ -z $(ls -A "$locked") ]] || { ls -la "$locked"; rm -rf "$locked"; fail "the unwritable folder was touched"; }
  echo "ok: unwritable folder: $(grep -m1 -o 'cannot save checkpoint.*' "$dir.log" | head -c 200)"
  rm -rf "$locked"
fi
rm -f "$dir.log"
echo "ok: crash safety at np 1 and np $np"

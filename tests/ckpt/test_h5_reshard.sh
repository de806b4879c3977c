#!/usr/bin/env bash
# test_h5_reshard.sh — a checkpoint written at np=2 reads back identically at np=1 (no mpirun)
# and np=3; then one written at np=3 reads back at np=2.
# Usage: test_h5_reshard.sh MPIEXEC DRIVER [flags that allow 3 ranks on this machine...]
set -euo pipefail
mpiexec=$1; driver=$2; shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$mpiexec" -n 2 "$@" "$driver" write "$dir" 7
"$driver" check "$dir" 7
"$mpiexec" -n 3 "$@" "$driver" check "$dir" 7
"$mpiexec" -n 3 "$@" "$driver" write "$dir" 8
"$mpiexec" -n 2 "$@" "$driver" check "$dir" 8
"$driver" check "$dir" 8
[[ $(cat "$dir/latest") == step_00000008.h5 ]] || { echo "FAIL: latest is $(cat "$dir/latest")"; exit 1; }
if command -v h5dump >/dev/null; then
  header=$(h5dump -A "$dir/step_00000008.h5")
  grep -q 'farthing_complete' <<<"$header" || { echo "FAIL: h5dump -A"; exit 1; }
  h5dump -d /model/wte "$dir/step_00000008.h5" >/dev/null
  echo "ok: h5dump reads the file"
fi
echo "ok: np 2 -> 1, 3 and np 3 -> 2, 1 read identical contents"

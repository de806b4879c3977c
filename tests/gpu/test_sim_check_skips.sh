#!/usr/bin/env bash
# test_sim_check_skips.sh SRC — tools/gpu/sim_check.sh without a simulator: skips (exit 77) at
# once with the line naming FARTHING_GPU_SIMULATOR, and refuses a folder without a libcudart
# (exit 2), configuring and building nothing either way (its build folder stays absent).
set -uo pipefail
src="$1"
tmp="$(mktemp -d /tmp/farthing_sim_check.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
status=0

out="$(env -u FARTHING_GPU_SIMULATOR bash "$src/tools/gpu/sim_check.sh" "$tmp/build" 2>&1)"
rc=$?
if [[ $rc -eq 77 && $out == *"set FARTHING_GPU_SIMULATOR="*"skipped" && $(wc -l <<<"$out") -eq 1 ]]; then
  echo "ok: no simulator: exit 77 and one line: $out"
else
  echo "FAIL: no simulator: exit $rc, output: $out"
  status=1
fi

mkdir -p "$tmp/empty"
out="$(FARTHING_GPU_SIMULATOR="$tmp/empty" bash "$src/tools/gpu/sim_check.sh" "$tmp/build" 2>&1)"
rc=$?
if [[ $rc -eq 2 && $out == *"holds no libcudart"* ]]; then
  echo "ok: a folder without libcudart: exit 2: $out"
else
  echo "FAIL: a folder without libcudart: exit $rc, output: $out"
  status=1
fi

if [[ -e $tmp/build ]]; then
  echo "FAIL: sim_check.sh created its build folder although it had no simulator"
  status=1
fi
exit $status

#!/usr/bin/env bash
# dry_run.sh — run the GPU check on this machine (no GPU) the way the GPU machine will, and
# prove the package lacks nothing: the archive is unpacked into an empty folder by check.sh,
# inside a private mount namespace where this machine's own copies of everything the package
# carries are hidden (each bound over by /dev/null, so loading one fails), as are Open MPI's
# launcher, daemon, components, help texts and settings and hwloc's plugins. A library the
# package forgot, or a binary that still reached for the system's copy, makes a test fail.
# Libraries that the check's own tools (bash, ctest, python3, xz, git...) also use cannot be
# hidden; for those, check.sh's resolve step shows the loader picks the package's copy.
#
# Expected: every step passes or skips, the CUDA tests and benchmarks stop at "no CUDA
# device", check.sh exits 2, and this script then exits 0. The two-rank ZeRO check and the
# trainer's preset runs go through the strict test device here with stories260k
# (ZERO_CHECK_*, TRAIN_PRESETS_*), the former through the package's own mpirun. The steps are sized for a GPU
# machine's 16 cores; on 2 cores one can take longer than 90 s, so here each step may take
# up to FARTHING_CHECK_STEP_MAX_S (default 600) and the run FARTHING_CHECK_BUDGET_S (1800).
#
# usage: tools/gpu/dry_run.sh     (after tools/gpu/package.sh; root, for unshare and mount)
#   OUT  where gpu-report.md and the logs go (default: a new temp folder)
#   FARTHING_DRY_RUN_SHARED=1  keep ../shared and HDF5's tools visible (see below)
# Relies on: util-linux (unshare, mount), the package, tools/gpu/check.sh.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
archive="$root/.gpu/farthing-gpu.tar.xz"
[[ -f "$archive" ]] || { echo "dry_run.sh: $archive not found; run tools/gpu/package.sh first" >&2; exit 3; }
[[ $(id -u) -eq 0 ]] || { echo "dry_run.sh: needs root (a private mount namespace hides the system's libraries)" >&2; exit 3; }

work="$(mktemp -d /tmp/farthing-dry-run.XXXXXX)"
out="${OUT:-$work/out}"
mkdir -p "$out" "$work/empty"
tar -xJOf "$archive" farthing-gpu/MANIFEST >"$work/MANIFEST"

# Libraries the check's own tools load: these stay visible (the tools must run).
tools=(bash ctest cmake python3 xz tar timeout grep sed awk sort cut getconf mktemp xargs git hostname date nproc readelf)
with_shared="${FARTHING_DRY_RUN_SHARED:-0}"
if [[ $with_shared == 1 ]]; then
  tools+=(h5dump h5diff)  # the trainer's tests compare checkpoints with them
fi
declare -A tool_libs=()
for t in "${tools[@]}"; do
  p="$(command -v "$t" || true)"
  [[ -n "$p" ]] || continue
  while read -r name arrow _; do
    [[ "$arrow" == "=>" ]] && tool_libs[$name]=1
  done < <(ldd "$(readlink -f "$p")" 2>/dev/null || true)
done

# Everything the package carries, by the path this machine would load it from.
hide_files=() kept=()
while read -r rel arrow origin; do
  [[ "$arrow" == "<-" && "$rel" == lib/* && -f "$origin" ]] || continue
  name="$(basename "$rel")"
  if [[ -n "${tool_libs[$name]:-}" ]]; then kept+=("$name"); continue; fi
  hide_files+=("$(readlink -f "$origin")")
done <"$work/MANIFEST"
for b in orted orterun mpirun mpiexec; do
  p="$(command -v "$b" || true)"
  [[ -n "$p" ]] && hide_files+=("$(readlink -f "$p")")
done
hide_dirs=()
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/hwloc /usr/lib/x86_64-linux-gnu/pmix2 \
         /usr/share/openmpi /etc/openmpi; do
  [[ -d "$d" ]] && hide_dirs+=("$d")
done
# The GPU machine has neither the shared reference folder (models, texts) nor HDF5's tools, so
# by default neither is seen here either: the tests that need them skip, as they will there.
# FARTHING_DRY_RUN_SHARED=1 keeps both, for more coverage (the trainer's tests then also run the
# package's farthing, HDF5 and MPI-IO end to end).
shared_env=""
if [[ $with_shared != 1 ]]; then
  # Hidden twice: an empty folder over it for the test scripts (they look for its files), and
  # FARTHING_SHARED_DIR naming no folder for the test binaries (they look for the folder).
  [[ -d "$root/../shared" ]] && hide_dirs+=("$(cd "$root/../shared" && pwd)")
  shared_env="FARTHING_SHARED_DIR=$work/no-shared-folder"
  for p in /usr/bin/h5*; do
    [[ -f "$p" ]] && hide_files+=("$(readlink -f "$p")")
  done
fi
echo "dry run: hiding ${#hide_files[@]} files and ${#hide_dirs[@]} folders of this machine's Open MPI, HDF5, oneDNN," \
  "yaml-cpp, ... (kept visible for the check's own tools: ${kept[*]:-none})"

printf '%s\n' "${hide_files[@]}" | sort -u >"$work/hide_files"
printf '%s\n' "${hide_dirs[@]}" >"$work/hide_dirs"
set +e
unshare -m --propagation private bash -c '
  set -e
  while read -r f; do mount --bind /dev/null "$f"; done <"$1/hide_files"
  while read -r d; do mount --bind "$1/empty" "$d"; done <"$1/hide_dirs"
  cd "$2"
  exec env -u LD_LIBRARY_PATH OUT="$3" FARTHING_GPU_UNPACK_DIR="$1/unpacked" $4 \
    ZERO_CHECK_DEVICE=strict ZERO_CHECK_PRESET=stories260k \
    TRAIN_PRESETS_DEVICE=strict TRAIN_PRESETS_PRESET=stories260k TRAIN_PRESETS_SEQ=64 \
    FARTHING_CHECK_STEP_MAX_S="${FARTHING_CHECK_STEP_MAX_S:-600}" FARTHING_CHECK_BUDGET_S="${FARTHING_CHECK_BUDGET_S:-1800}" \
    tools/gpu/check.sh
' _ "$work" "$root" "$out" "$shared_env"
rc=$?
set -e
echo "dry run: check.sh exited $rc; report $out/gpu-report.md"
if [[ $rc -eq 2 ]]; then
  echo "dry run: OK (nothing missing; the CUDA steps stopped at \"no CUDA device\")"
  exit 0
fi
echo "dry run: FAILED (expected exit 2: all passed or skipped, no CUDA device)"
exit 1

#!/usr/bin/env bash
# test_gpu_package.sh — the GPU package (tools/gpu/package.sh) is at most 48 MiB and closed:
# every library its binaries and Open MPI components need is inside it or on the GPU machine's
# list (tools/gpu/closure.sh), and this machine's loader resolves every binary into it
# (tools/gpu/resolve.sh). Then the checks are shown to fail on copies broken on purpose: a
# carried library removed or truncated, a DT_RUNPATH put back, a binary without the package
# RPATH, NCCL dropped from the GPU machine's list. The package's mpirun starts two ranks. Building the package takes minutes, so this checks the
# package that was built (.gpu/farthing-gpu.tar.xz) and skips (77) when there is none.
#
# usage: test_gpu_package.sh SOURCE_DIR
# Relies on: tar, xz, readelf, python3, tools/gpu/{closure,resolve}.sh, runpath_to_rpath.py.
set -euo pipefail

src="${1:?usage: test_gpu_package.sh SOURCE_DIR}"
archive="$src/.gpu/farthing-gpu.tar.xz"
limit_bytes=$((48 * 1024 * 1024))
if [[ ! -f "$archive" ]]; then
  echo "SKIP: no package at $archive (build one with tools/gpu/package.sh)"
  exit 77
fi
for t in readelf xz python3; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
fail() { echo "FAIL: $*" >&2; exit 1; }

size=$(stat -c %s "$archive")
((size <= limit_bytes)) || fail "$archive is $size bytes, over 48 MiB ($limit_bytes)"
echo "ok: size $((size / 1024)) KiB <= 48 MiB"

work="$(mktemp -d /tmp/farthing_gpu_package.XXXXXX)"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$archive"
pkg="$work/farthing-gpu"
for f in bin/farthing bin/test_cuda_parity bin/test_cuda_optim_parity bin/test_nccl env.sh GLIBC_MIN \
         ctest/CTestTestfile.cmake.in lib/openmpi/mca_ess_singleton.so lib/openmpi/mca_pmix_isolated.so \
         bin/mpirun lib/libpmix.so.2 lib/openmpi/mca_pmix_ext3x.so lib/openmpi/mca_plm_rsh.so lib/openmpi/mca_odls_default.so \
         share/pmix; do
  [[ -e "$pkg/$f" ]] || fail "the package lacks $f"
done
for t in test_cuda_parity test_cuda_optim_parity test_nccl_np1; do
  grep -q "add_test(\"$t\"" "$pkg/ctest/CTestTestfile.cmake.in" || fail "the package's test list lacks $t"
done

# The package's launcher starts two ranks with the package's own components (env.sh); run with
# the system's Open MPI hidden, tools/gpu/dry_run.sh shows that nothing else was needed.
out="$(PKG="$pkg" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 bash -c \
  'source "$PKG/env.sh" && timeout 120 "$PKG/bin/mpirun" --oversubscribe -np 2 "$PKG/bin/test_collectives" --gtest_brief=1' 2>&1)" \
  || fail "the package's mpirun did not run test_collectives at np 2: $(tail -n 5 <<<"$out")"
[[ $(grep -c "PASSED" <<<"$out") -eq 2 ]] || fail "the package's mpirun: expected two ranks' PASSED lines in: $out"
echo "ok: the package's mpirun runs test_collectives at np 2"

closure="$src/tools/gpu/closure.sh" resolve="$src/tools/gpu/resolve.sh" allow="$src/tools/gpu/gpu_machine_libs.txt"
"$closure" "$pkg" "$allow" || fail "closure.sh rejects the package as built"
"$resolve" "$pkg" "$allow" | tail -n 1
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "resolve.sh rejects the package as built"

# expect_failure WHAT PATTERN COMMAND... — the check must exit 1 and name the problem.
expect_failure() {
  local what="$1" pattern="$2"; shift 2
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  [[ $rc -eq 1 ]] || fail "$what: expected exit 1, got $rc: $out"
  grep -q -- "$pattern" <<<"$out" || fail "$what: no line matching '$pattern' in: $out"
  echo "ok: $what is caught"
}

mv "$pkg/lib/libmpi.so.40" "$work/libmpi.so.40"
expect_failure "a carried library removed (closure)" "needs libmpi.so.40: not in the package" "$closure" "$pkg" "$allow"
# Not found (a machine without Open MPI) or found outside the package (this one): both fail.
expect_failure "a carried library removed (loader)" "libmpi.so.40" "$resolve" "$pkg" "$allow"
head -c 100 "$work/libmpi.so.40" >"$pkg/lib/libmpi.so.40"
expect_failure "a carried library the loader cannot read" "the loader failed" "$resolve" "$pkg" "$allow"
mv "$work/libmpi.so.40" "$pkg/lib/libmpi.so.40"

python3 "$src/tools/gpu/runpath_to_rpath.py" --reverse "$pkg/lib/libmpi.so.40" >/dev/null
expect_failure "a DT_RUNPATH put back" "libmpi.so.40 has DT_RUNPATH" "$closure" "$pkg" "$allow"
python3 "$src/tools/gpu/runpath_to_rpath.py" "$pkg/lib/libmpi.so.40" >/dev/null

cp "$(readlink -f "$(type -P true)")" "$pkg/bin/no_rpath"
expect_failure "a binary without the package RPATH" "bin/no_rpath has RPATH \[\]" "$closure" "$pkg" "$allow"
rm "$pkg/bin/no_rpath"

grep -v '^libnccl' "$allow" >"$work/allow_without_nccl"
expect_failure "a library neither carried nor on the GPU machine" "needs libnccl.so.2" "$closure" "$pkg" "$work/allow_without_nccl"

"$closure" "$pkg" "$allow" >/dev/null || fail "the package does not pass again after being restored"
echo "ok: the package passes again once restored"

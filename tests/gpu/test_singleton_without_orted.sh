#!/usr/bin/env bash
# test_singleton_without_orted.sh — world size 1 needs no mpirun and no orted (the GPU machine
# has neither; mpi_communicator.cpp initialises a launcher-less process as an isolated
# singleton). An MPI test binary is run with no launcher in its environment, with Open MPI's
# bin folder (OPAL_BINDIR, where a singleton looks for orted) and the PATH pointing nowhere: it
# must pass. As a control, the same run with the isolation turned off must fail, which shows
# that orted really was out of reach (otherwise the first half would prove nothing).
#
# usage: test_singleton_without_orted.sh MPI_TEST_BINARY   (e.g. test_collectives)
set -uo pipefail

bin="${1:?usage: test_singleton_without_orted.sh MPI_TEST_BINARY}"
fail() { echo "FAIL: $*" >&2; exit 1; }
run_without_orted() {
  # env -u: no launcher variables may leak in from a surrounding mpirun.
  timeout 60 /usr/bin/env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u SLURM_PROCID OPAL_BINDIR=/nonexistent \
    "$@" PATH=/nonexistent "$bin" --gtest_brief=1
}

out="$(run_without_orted 2>&1)" || fail "world size 1 failed without orted: $(tail -n 5 <<<"$out")"
echo "ok: world size 1 runs without mpirun or orted"

out="$(run_without_orted OMPI_MCA_ess_singleton_isolated=0 2>&1)" &&
  fail "the control passed: with isolation off the singleton should have needed orted, so orted was reachable"
echo "ok: control: with isolation off the same run fails (orted was out of reach)"

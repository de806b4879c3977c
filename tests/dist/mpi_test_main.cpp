// mpi_test_main.cpp — gtest main for tests that run under mpirun (and alone, as world size 1).
//
// Initialises MPI before any test, runs every test on every rank, and makes all ranks agree on
// the exit code (a failure on any rank fails the job), so ctest sees one verdict. Output from
// ranks other than 0 is kept: a failure names the rank through the FARTHING_RANK prefix below.
// Relies on: framework/dist/mpi_communicator.h, GTest.
// Used by: tests/dist/CMakeLists.txt, tests/ckpt/h5.cmake.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/dist/mpi_communicator.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  {
    auto world = farthing::make_world_communicator();
    std::printf("[rank %d of %d]\n", world->rank(), world->world_size());
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    int32_t any_failed = failed;
    world->all_reduce(farthing::Tensor(&any_failed, farthing::DType::kI32, {1}),
                      farthing::ReduceOp::kMax);
    if (any_failed != 0 && failed == 0) {
      std::printf("[rank %d] passed here, but another rank failed\n", world->rank());
    }
    failed = any_failed;
  }
  return failed;
}

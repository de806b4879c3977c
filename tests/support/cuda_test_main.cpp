// cuda_test_main.cpp — gtest main for CUDA tests (farthing_add_test(... CUDA)): exits 77 before
// any test runs when no GPU is visible, which ctest reports as skipped.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/backend/backend.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (!farthing::cuda_available()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}

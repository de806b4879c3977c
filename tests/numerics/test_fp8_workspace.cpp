// test_fp8_workspace.cpp — the FP8 GEMM workspace per engine (kernels/numerics/fp8_workspace.h),
// worked by hand: the emulation's two dequantized operands (bf16 with power-of-two scales, else
// fp32); cuBLASLt's FP8 path (its 32 MiB, the two operands' codes and their scale budgets, each
// rounded up to 256 bytes) and its fallback (as the emulation's, the first part aligned), the
// larger of the two.
#include <gtest/gtest.h>

#include "kernels/numerics/fp8_workspace.h"

namespace farthing::numerics {
namespace {

TEST(Fp8Workspace, EmulatedDequantizesBothOperands) {
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kEmulated, 1000, 24, true), 2048);
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kEmulated, 1000, 24, false), 4096);
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kEmulated, 0, 0, false), 0);
}

TEST(Fp8Workspace, CublasLtByHand) {
  // a = 1000 codes -> 1024 bytes; b = 24 -> 256; scales: (1000 + 31) / 32 + 1024 = 1056 floats =
  // 4224 bytes -> 4352; (24 + 31) / 32 + 1024 = 1025 floats = 4100 bytes -> 4352.
  const int64_t fp8_path = (int64_t(32) << 20) + 1024 + 256 + 4352 + 4352;
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kCublasLt, 1000, 24, true), fp8_path);
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kCublasLt, 1000, 24, false), fp8_path);
  // Operands of 16 Mi elements in fp32: the fallback (64 MiB + 64 MiB) outgrows the FP8 path
  // (32 + 16 + 16 MiB and the scale budgets, 2 MiB + 4 KiB each).
  const int64_t n = int64_t(16) << 20;
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kCublasLt, n, n, false), 8 * n);
  EXPECT_EQ(fp8_matmul_workspace_bytes(Fp8GemmEngine::kCublasLt, n, n, true),
            (int64_t(32) << 20) + 2 * n + 2 * fp8_round_up(4 * (n / 32 + 1024), 256));
}

}  // namespace
}  // namespace farthing::numerics

// fp4_workspace.h — the scratch one FP4 GEMM (NnOps::matmul_fp4) needs, per engine: one
// definition that the backends allocate by and `farthing plan` sizes by, on any machine.
//   emulated (CPU, strict device, host copies): both operands dequantized to bf16 (exact), then
//     the fp32 product, packed as kernels/cpu/fp4_cpu.cpp carves them;
//   cuBLASLt (CUDA): the larger of its FP4 path (the fp32 product, cuBLASLt's own scratch, both
//     operands' codes packed two to a byte and their scales tiled as fp4_lt_layout.h says) and
//     its exact emulation on the device (the emulated parts, each on a 256-byte boundary), which
//     GPUs without FP4 tensor cores run when the recipe opts in.
// Relies on: fp4_lt_layout.h. Tested by: tests/numerics/test_fp4_lt_layout.cpp; the backends' FP4
// GEMM tests run in workspaces of these sizes (tests/kernels/test_fp4_cpu.cpp, test_nn_ops_parity.cpp).
#pragma once

#include <cstdint>

#include "kernels/numerics/fp4_lt_layout.h"

namespace farthing::numerics {

enum class Fp4GemmEngine : uint8_t { kEmulated, kCublasLt };

inline constexpr int64_t kFp4LtScratchBytes = int64_t(32) << 20;  // cuBLASLt's own, as for FP8
inline constexpr int64_t kFp4LtAlign = 256;                       // every device workspace part starts here

// C (m, n) from A (m, k) and B (n, k), `block` elements to a scale.
inline int64_t fp4_matmul_workspace_bytes(Fp4GemmEngine engine, int64_t m, int64_t n, int64_t k, int block) {
  if (engine == Fp4GemmEngine::kEmulated) return (m * k + n * k) * 2 + m * n * 4;
  const auto up = [](int64_t x) { return fp4_lt_round_up(x, kFp4LtAlign); };
  const int64_t blocks = (k + block - 1) / block;
  const int64_t lt_path = up(m * n * 4) + kFp4LtScratchBytes + up((m * k + 1) / 2) + up((n * k + 1) / 2) +
                          up(fp4_lt_scale_bytes(m, blocks)) + fp4_lt_scale_bytes(n, blocks);
  const int64_t emulated = up(m * k * 2) + up(n * k * 2) + m * n * 4;
  return lt_path > emulated ? lt_path : emulated;
}

}  // namespace farthing::numerics

// fp8_workspace.h — the scratch one FP8 GEMM needs, per engine, as a function of its operands'
// sizes: one definition that the backends allocate by and `farthing plan` sizes by, on any
// machine (a plan for train.device: cuda runs where no GPU is).
//   emulated (CPU, strict device): both operands dequantized, in bf16 when every scale is a power
//     of two (exact), else in fp32;
//   cuBLASLt (CUDA): the larger of its FP8 path (cuBLASLt's own scratch, the operands' codes
//     transposed where Hopper's TN-only GEMM needs it, their scales rearranged, each part on a
//     256-byte boundary) and its fallback (the emulation's dequantized operands, the first part
//     aligned).
// Relies on: nothing. Tested by: tests/numerics/test_fp8_workspace.cpp; the backends' FP8 GEMM
// tests run in workspaces of these sizes (tests/kernels/test_fp8_cpu.cpp, test_nn_ops_parity.cpp).
#pragma once

#include <cstdint>

namespace farthing::numerics {

enum class Fp8GemmEngine : uint8_t { kEmulated, kCublasLt };

inline constexpr int64_t kFp8LtScratchBytes = int64_t(32) << 20;  // cuBLASLt's own (NVIDIA's advice for Hopper)
inline constexpr int64_t kFp8LtAlign = 256;                       // every workspace part starts here

inline constexpr int64_t fp8_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Scale floats the cuBLASLt path may rearrange for one operand of `elems` elements: enough for any
// operand with k >= 32 (1 x 128 tiles: rows * ceil(k/128) <= elems / 32); a plan that would need
// more takes the fallback, so the bound is a size, never a correctness, question.
inline constexpr int64_t fp8_lt_scale_budget_floats(int64_t elems) { return (elems + 31) / 32 + 1024; }

inline constexpr int64_t fp8_matmul_workspace_bytes(Fp8GemmEngine engine, int64_t a_elems, int64_t b_elems,
                                                    bool power_of_two) {
  const int64_t width = power_of_two ? 2 : 4;
  if (engine == Fp8GemmEngine::kEmulated) return (a_elems + b_elems) * width;
  const int64_t fp8_path = kFp8LtScratchBytes + fp8_round_up(a_elems, kFp8LtAlign) +
                           fp8_round_up(b_elems, kFp8LtAlign) +
                           fp8_round_up(4 * fp8_lt_scale_budget_floats(a_elems), kFp8LtAlign) +
                           fp8_round_up(4 * fp8_lt_scale_budget_floats(b_elems), kFp8LtAlign);
  const int64_t fallback = fp8_round_up(a_elems * width, kFp8LtAlign) + b_elems * width;
  return fp8_path > fallback ? fp8_path : fallback;
}

}  // namespace farthing::numerics

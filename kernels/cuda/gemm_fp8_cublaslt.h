// gemm_fp8_cublaslt.h — NnOps::matmul_fp8 on a CUDA device: C (fp32) (+)= op(A) op(B) of FP8
// operands (kernels/numerics/fp8_operand.h: codes plus one s_inv per tile) through cuBLASLt,
// fp32 accumulation, or an exact dense fallback where cuBLASLt cannot express the operands.
//
// cuBLASLt's FP8 GEMM on Hopper (sm_90) takes only the "TN" form: both operands K-major (the
// reduced dimension contiguous). In our row-major terms that is C = A (m, k) · B (n, k)ᵀ, the
// forward projection. An operand stored the other way (dgrad's W (n, k) read as (k, n), wgrad's
// dYᵀ and X) has its codes transposed into the workspace first. Scales, per cublasLt.h (13.1)
// and the layouts PyTorch's _scaled_mm checks against it:
//   kTensor   → CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, the s_inv pointer as is;
//   1 x 128 tiles along k (kRow1x128 of a K-major operand, kCol128x1 of one stored (k, outer))
//             → VEC128_32F: ceil(k/128) columns of outer floats, outer fastest, each column
//               padded to a multiple of 4 floats (a kCol128x1 array is already that when outer
//               is a multiple of 4; otherwise, and for a kRow1x128 array, the scales are copied
//               into the workspace in that layout);
//   kBlock128 → BLK128x128_32F: ceil(outer/128) rows of ceil(k/128) floats, k fastest, each row
//               padded to a multiple of 4 floats (copied into the workspace unless it already is).
// sm_90 pairs: SCALAR x SCALAR, VEC128 x VEC128, VEC128 x BLK128x128 (either way round); never
// BLK x BLK, never a scalar with a block mode. So the model's three GEMMs map as:
//   forward A (m, k) · W (n, k)ᵀ, kRow1x128 x kBlock128:         VEC128 x BLK, no transpose;
//   dgrad   dY (m, n) · W (n, k), kRow1x128 x kBlock128:         VEC128 x BLK, W's codes transposed;
//   wgrad   dYᵀ · X over the m tokens, kCol128x1 x kCol128x1:    VEC128 x VEC128, both transposed
//           (the 128 x 1 tiles run along the reduced dimension, so they are 1 x 128 tiles of
//           the transposed operands and their scale arrays need no rearranging);
//   per-tensor scaling of any of them:                           SCALAR x SCALAR.
// FALLBACK (honest, exact): every other case — a tile along the outer dimension (kRow1x128 of an
// operand reduced over rows, kCol128x1 of one reduced over columns), BLK x BLK, kTensor mixed
// with tiles, k not a multiple of 16 (FP8 rows must be 16-byte multiples), E5M2 x E5M2, or any
// shape for which cuBLASLt's heuristic (or its first matmul call) answers "not supported" —
// dequantizes both operands into the workspace, q · s_inv, which is exact in bf16 with
// power-of-two scales (else fp32), and runs the dense cuBLASLt GEMM (matmul_cublaslt.h): the
// CPU emulation's computation (kernels/cpu/fp8_cpu.h), at bf16 speed rather than FP8's.
// Set FARTHING_FP8_PLAN_LOG=1 to print each plan's choice and reason once to stderr.
//
// Plans are cached per (shape, transposes, tilings, formats, alignment) like MatmulLt's; the
// preference forbids split-K reduction schemes, so a plan repeats bit for bit; fast
// accumulation stays off (cuBLASLt promotes partial sums into fp32 along k). C agrees with the
// CPU emulation within the FP8 GEMM tolerance of the parity table (summation order and the
// tensor cores' in-block accumulation), never bitwise.
// Relies on: cuBLASLt, fp8_cuda.h, matmul_cublaslt.h. Tested by: tests/kernels/test_nn_ops_parity.cpp
// (matmul_fp8 rows; skips without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "kernels/numerics/fp8_operand.h"
#include "kernels/numerics/fp8_workspace.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

class MatmulLt;

class MatmulFp8Lt {
 public:
  // cuBLASLt's own scratch, carved from the caller's workspace (NVIDIA's advice for Hopper).
  static constexpr int64_t kLtWorkspaceBytes = numerics::kFp8LtScratchBytes;

  // dense: the backend's dense GEMM, used by the fallback (must outlive this object).
  explicit MatmulFp8Lt(MatmulLt& dense);
  ~MatmulFp8Lt();
  MatmulFp8Lt(const MatmulFp8Lt&) = delete;
  MatmulFp8Lt& operator=(const MatmulFp8Lt&) = delete;

  // Device scratch run() needs for operands of these sizes, power_of_two = both operands'
  // power_of_two: kernels/numerics/fp8_workspace.h's cuBLASLt engine (the larger of the FP8
  // path and the fallback).
  static int64_t workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two);

  // Queues C (+)= op(A) op(B) on `stream`; does not wait. Operands already checked
  // (framework/backend/fp8_op_checks.h); workspace: workspace_bytes(...) bytes of device memory.
  void run(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
           void* workspace, cudaStream_t stream);

  // Cached plans by path (for tests, benchmarks and the trainer's metrics.jsonl).
  size_t fp8_plans() const;
  size_t fallback_plans() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace farthing::kernels

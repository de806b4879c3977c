// gemm_fp4_cublaslt.h — NnOps::matmul_fp4 on a CUDA device: C (fp32) (+)= A (m, k) · B (n, k)ᵀ of
// two FP4 operands (kernels/numerics/fp4_operand.h), through cuBLASLt's block-scaled FP4 GEMM
// where the GPU has FP4 tensor cores (sm_100 and later), or the exact emulation on the device.
//
// FP4 path (sm_100+): both operands are K-major already (fp4_operand.h stores them as the TN GEMM
// reads them). Their codes are packed two to a byte and their scales tiled into cuBLASLt's
// layout (kernels/numerics/fp4_lt_layout.h) in the workspace; cuBLASLt multiplies with
// CUDA_R_4F_E2M1 operands, VEC16_UE4M3 (NVFP4) or VEC32_UE8M0 (MXFP4) scales and fp32
// accumulation into an fp32 product; fp4_gemm_epilogue_cuda then applies the per-tensor scales,
// s_dec(A) · s_dec(B), as the CPU emulation does. (The product is multiplied by alpha in our own
// kernel rather than cuBLASLt's device-pointer alpha, so the epilogue is the CPU's, one function.)
// Emulation (every GPU; the only path below sm_100, which the trainer takes only where the recipe
// opts in with train.fp4_gpu_emulation): both operands dequantized without their tensor scales
// into bf16 (exact), the dense cuBLASLt bf16 GEMM (matmul_cublaslt.h), the same epilogue: what
// kernels/cpu/fp4_cpu.h computes, at bf16 speed.
// The FP4 path falls back to the emulation, with one line on stderr per shape, where cuBLASLt
// cannot take the operands: k not a multiple of 32 (a packed row must be a multiple of 16 bytes),
// or the heuristic (or a plan's first call) declining.
// NOTE: the FP4 path has never run: no GPU with FP4 tensor cores has been lent to this project
// (the H200 is sm_90). It is compiled for sm_100 (kernels/cuda/CMakeLists.txt). The emulation and
// the packing and tiling kernels have run under the GPU simulator (docs/cuda_ops.md).
// C agrees with the CPU emulation within the GEMM tolerance (summation order), never bitwise.
// Relies on: cuBLASLt, fp4_cuda.h, matmul_cublaslt.h, kernels/numerics/fp4_workspace.h.
// Tested by: tests/kernels/test_nn_ops_parity.cpp (matmul_fp4 rows; skips without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "kernels/numerics/fp4_operand.h"

namespace farthing::kernels {

class MatmulLt;

class MatmulFp4Lt {
 public:
  // dense: the backend's dense GEMM, used by the emulation (must outlive this object).
  // tensor_cores: the device has FP4 tensor cores (compute capability 10.0 or later).
  MatmulFp4Lt(MatmulLt& dense, bool tensor_cores);
  ~MatmulFp4Lt();
  MatmulFp4Lt(const MatmulFp4Lt&) = delete;
  MatmulFp4Lt& operator=(const MatmulFp4Lt&) = delete;

  // Queues C (+)= A · Bᵀ on `stream`; does not wait. Operands already checked
  // (framework/backend/fp4_op_checks.h); workspace: fp4_matmul_workspace_bytes(kCublasLt, m, n,
  // k, block) bytes of device memory (kernels/numerics/fp4_workspace.h).
  void run(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c, bool accumulate,
           void* workspace, cudaStream_t stream);

  // Shapes planned by path (for tests, benchmarks and the trainer's metrics).
  size_t fp4_plans() const;
  size_t emulated_plans() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace farthing::kernels

// matmul_cublaslt.h — NnOps::matmul on a CUDA device through cuBLASLt: C (fp32) (+)= op(A) op(B),
// or C (bf16) = op(A) op(B), for A, B of GemmDtype f32 / bf16 / f16, every shape, transpose and leading dimension of
// kernels/numerics/op_shapes.h (row-major as stored).
//
// Each distinct (dtype, shape, strides, transposes, pointer alignment, epilogue) is planned once —
// layouts, descriptor and an algorithm — and kept in a cache, so a training step never queries the
// heuristic again. Which algorithm is the planner's (cublaslt_planner.h, shared with the FP8 and
// FP4 GEMMs): by default the heuristic's first, which depends only on the key, the device and the
// cuBLASLt version, so a run repeats the same algorithms. Determinism: the preference allows no
// split-K reduction scheme (CUBLASLT_REDUCTION_SCHEME_NONE), so no algorithm sums partial
// products through atomics or an order that could change between runs. fp32 inputs run
// CUBLAS_COMPUTE_32F (no TF32). C is never bitwise the CPU's (oneDNN sums in its own order):
// the parity harness compares within the GEMM tolerance class.
// Epilogues: a bias added to D (CUBLASLT_EPILOGUE_BIAS: an fp32 bias for an fp32 D, a bf16 one for
// a bf16 D, as cuBLASLt takes a bias of D's type), and a bias gradient written beside a weight
// gradient's D (BGRADA / BGRADB: the sums over k of one operand). NOTE: no GELU epilogue:
// cuBLASLt's GELU is NVIDIA's own formula, and every elementwise op is one definition shared by
// the CPU and CUDA (kernels/numerics/activations.h), bitwise across backends; so GELU stays its
// own kernel (docs/cuda_ops.md).
// Relies on: cuBLASLt, the CUDA runtime. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

class LtPlanner;

class MatmulLt {
 public:
  // workspace_bytes of device scratch are allocated on first use.
  explicit MatmulLt(size_t workspace_bytes = size_t(32) << 20);
  ~MatmulLt();
  MatmulLt(const MatmulLt&) = delete;
  MatmulLt& operator=(const MatmulLt&) = delete;

  // Queues C (+)= op(A) op(B) on `stream`; does not wait.
  void run(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c, bool accumulate,
           cudaStream_t stream);
  // Queues C = bf16(add + op(A) op(B)): cuBLASLt's bf16 D, the fp32 accumulation (plus the
  // widened add, cuBLASLt's bf16 C with beta 1, when add is not null; it may be C itself) rounded
  // once.
  void run_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const uint16_t* add,
                    uint16_t* c, cudaStream_t stream);
  // The GEMMs with an epilogue. Each returns false, queuing nothing, where cuBLASLt has no
  // algorithm for the plan with its epilogue (said once per plan on stderr), and for an empty m, n
  // or k (said nowhere: the separate ops are exact there); the caller then runs the GEMM and the
  // bias's own kernels.
  // C = (op(A) op(B) (+ C when accumulate)) + bias, fp32 C, bias (n, fp32) added after beta C.
  bool run_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias, float* c,
                bool accumulate, cudaStream_t stream);
  // C = bf16(add + op(A) op(B) + bias), bias (n) the bf16 operand (numerics/gemm_bias.h), widened
  // by the epilogue and added in fp32 before D's one rounding; add as in run_bf16_out.
  bool run_bf16_out_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const uint16_t* bias,
                         const uint16_t* add, uint16_t* c, cudaStream_t stream);
  // C (+)= op(A) op(B), and dbias = the sums over k of op(A) (side kA: m sums, one per row of C)
  // or of op(B) (kB: n sums, one per column), fp32, written, not added; in cuBLASLt's own order,
  // fixed for the plan (no split-K), so a run repeats its bits.
  bool run_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c, bool accumulate,
                     BiasGradOf side, float* dbias, cudaStream_t stream);
  // Plans held in the cache (for tests and benchmarks).
  size_t cached_plans() const;
  // The algorithm choices of this GEMM's plans and of the FP8 and FP4 GEMMs built over it.
  LtPlanner& planner();

 private:
  enum class Epilogue : uint8_t { kNone, kBias, kBiasGradOfA, kBiasGradOfB };
  struct State;
  std::unique_ptr<State> state_;
  // D = op(A) op(B) (+ C when accumulate), then the epilogue with `bias` (its operand or output);
  // C and D share a type and layout, and may be one array. False where an epilogue has no
  // algorithm (or the sizes are empty), having queued nothing.
  bool queue(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const void* c, void* d,
             bool d_bf16, bool accumulate, Epilogue epilogue, const void* bias, cudaStream_t stream);
};

}  // namespace farthing::kernels

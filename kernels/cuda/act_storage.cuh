// act_storage.cuh — how a kernel reads and writes an activation element of its storage type:
// fp32 as is; bf16 (uint16_t bits) widened exactly on load and rounded to nearest-even once on
// store. Kernels are templated on the storage type, so bf16 activations need no second copy of
// any kernel. Behind NnOps the bf16 form is instantiated for the outputs that only GEMMs read
// (the norms, SwiGLU, GELU: framework/backend/act_ref.h) and for the gradients stored as bf16.
// Relies on: numerics/bf16.h. Used by: activation_cuda.cu, norm_cuda.cu, rope_cuda.cu, embedding_cuda.cu, bias_cuda.cu.
#pragma once

#include <cstdint>

#include "kernels/numerics/bf16.h"

namespace farthing::kernels::cuda_nn {

__device__ __forceinline__ float load_f32(const float* p) { return *p; }
__device__ __forceinline__ float load_f32(const uint16_t* p) { return numerics::bf16_to_f32(*p); }
__device__ __forceinline__ void store_f32(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_f32(uint16_t* p, float v) { *p = numerics::f32_to_bf16_rne(v); }

// dout[r][i] (rows `stride` apart) as fp32: the term of a column sum over a stored gradient (the
// bias and norm backwards' sums, through nn_cuda_common.cuh's column_sum_accumulate).
template <class T>
struct StridedRowTerm {
  const T* dout;
  int64_t stride;
  __device__ float operator()(int64_t r, int64_t i) const { return load_f32(dout + r * stride + i); }
};

}  // namespace farthing::kernels::cuda_nn

// vec8.cuh — eight consecutive activation elements as fp32 in one go: a single 16-byte access for
// bf16, two for fp32. The caller checks that the eight start 16-byte aligned (vec8_aligned); the
// values are exactly those of act_storage.cuh's load_f32 / store_f32 element by element (bf16
// widened exactly, rounded to nearest-even once on store), so a kernel reading eight at a time
// computes the same bits as one reading one at a time.
// Relies on: act_storage.cuh, numerics/bf16.h. Used by: cross_entropy_cuda.cu, activation_cuda.cu, bias_cuda.cu,
// rope_cuda.cu, embedding_cuda.cu, gated_activation.cuh (SwiGLU, GeGLU).
#pragma once

#include <cstdint>

#include "kernels/cuda/act_storage.cuh"
#include "kernels/numerics/bf16.h"

namespace farthing::kernels::cuda_nn {

inline constexpr int kVec = 8;

// p is 16-byte aligned: groups of eight from p on (8g elements in) can use 16-byte accesses.
template <class T>
__host__ __device__ inline bool vec8_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
// Rows of `count` elements starting at p can all be read as groups of eight with 16-byte accesses.
template <class T>
__host__ __device__ inline bool vec8_aligned(const T* p, int64_t count) {
  return count % kVec == 0 && vec8_aligned(p);
}

__device__ __forceinline__ void load8_f32(const float* p, float (&v)[kVec]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void load8_f32(const uint16_t* p, float (&v)[kVec]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = numerics::bf16_to_f32(uint16_t(w[j] & 0xffffu));
    v[2 * j + 1] = numerics::bf16_to_f32(uint16_t(w[j] >> 16));
  }
}
__device__ __forceinline__ void store8_f32(float* p, const float (&v)[kVec]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void store8_f32(uint16_t* p, const float (&v)[kVec]) {
  uint32_t w[4];
  for (int j = 0; j < 4; ++j) {
    w[j] = uint32_t(numerics::f32_to_bf16_rne(v[2 * j])) | (uint32_t(numerics::f32_to_bf16_rne(v[2 * j + 1])) << 16);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// Group g of a row or flat array (elements 8g .. 8g + 7, those below `count`) as fp32: with one
// or two 16-byte accesses when the array is vec8_aligned and the group is whole, element by
// element otherwise (the tail group, unaligned arrays). Returns how many of the eight are in the
// array; the rest of v is left unset.
template <class T>
__device__ __forceinline__ int load_group_f32(const T* p, int64_t g, int64_t count, bool aligned, float (&v)[kVec]) {
  const int64_t i0 = g * kVec;
  const int n = count - i0 < kVec ? int(count - i0) : kVec;
  if (aligned && n == kVec) {
    load8_f32(p + i0, v);
  } else {
    for (int j = 0; j < n; ++j) v[j] = load_f32(p + i0 + j);
  }
  return n;
}
template <class T>
__device__ __forceinline__ void store_group_f32(T* p, int64_t g, int n, bool aligned, const float (&v)[kVec]) {
  const int64_t i0 = g * kVec;
  if (aligned && n == kVec) return store8_f32(p + i0, v);
  for (int j = 0; j < n; ++j) store_f32(p + i0 + j, v[j]);
}

}  // namespace farthing::kernels::cuda_nn

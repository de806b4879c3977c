// cast_cuda.cu — see cast_cuda.h.
//
// Three kernel templates: elementwise (narrowing with round-to-nearest, and widening; eight
// elements per thread, moved as aligned packs), and stochastic rounding over Philox groups. The per-format work is a small functor that calls
// the numerics/ scalar, so there is one definition of every cast for host and device.
#include "kernels/cuda/cast_cuda.h"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/numerics/bf16.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr unsigned kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU several times; grid-stride loops cover the rest.
// NOTE: every element's result is a pure function of its input (and, for stochastic rounding,
// of its global index), so the geometry chosen here can never change a bit of the output.
constexpr uint64_t kMaxBlocks = 1u << 15;

unsigned blocks_for(uint64_t work_items) {
  return unsigned(std::min<uint64_t>((work_items + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

// Eight consecutive elements, aligned to their size: copied as a whole with 16-byte (or, for the
// 1-byte formats, one 8-byte) accesses.
inline constexpr unsigned kPack = 8;
template <class T>
struct alignas(sizeof(T) * kPack) Pack {
  T v[kPack];
};
template <class T>
bool pack_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(Pack<T>) == 0;
}

// One thread per group of eight elements (grid-stride): whole groups of aligned arrays as packs,
// the tail group and unaligned arrays element by element.
template <class In, class Out, class Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
    elementwise_kernel(const In* __restrict__ src, Out* __restrict__ dst, size_t n, Op op, bool aligned) {
  const size_t groups = (n + kPack - 1) / kPack, stride = size_t(gridDim.x) * blockDim.x;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const size_t i0 = g * kPack;
    if (aligned && n - i0 >= kPack) {
      const Pack<In> in = reinterpret_cast<const Pack<In>*>(src)[g];
      Pack<Out> out;
#pragma unroll
      for (unsigned j = 0; j < kPack; ++j) out.v[j] = op(in.v[j]);
      reinterpret_cast<Pack<Out>*>(dst)[g] = out;
    } else {
      for (size_t i = i0; i < n && i < i0 + kPack; ++i) dst[i] = op(src[i]);
    }
  }
}

// One thread per Philox group of four elements, exactly as map_elements_sr in
// kernels/cpu/cast_cpu.cpp: one generator call serves four elements, and the partial groups
// at either end take their words from the same groups, so element i always gets
// random_bits_for_element(key, global_offset + i).
template <class Out, class Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
    narrow_sr_kernel(const float* __restrict__ src, Out* __restrict__ dst, size_t n,
                     nm::RandomKey key, uint64_t global_offset, uint64_t first_group,
                     uint64_t groups, Op op) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t g = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const uint64_t group = first_group + g;
    const nm::Philox4x32 words = nm::random_words_for_group(key, group);
#pragma unroll
    for (uint32_t lane = 0; lane < 4; ++lane) {
      const uint64_t global = group * 4 + lane;
      if (global < global_offset || global >= global_offset + n) continue;
      const size_t i = size_t(global - global_offset);
      dst[i] = op(src[i], words.v[lane]);
    }
  }
}

template <class In, class Out, class Op>
void launch_elementwise(const In* src, Out* dst, size_t n, Op op, cudaStream_t stream) {
  if (n == 0) return;
  const bool aligned = pack_aligned(src) && pack_aligned(dst);
  elementwise_kernel<<<blocks_for((n + kPack - 1) / kPack), kThreadsPerBlock, 0, stream>>>(src, dst, n, op, aligned);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

template <class Out, class Op>
void launch_narrow_sr(const float* src, Out* dst, size_t n, nm::RandomKey key,
                      uint64_t global_offset, Op op, cudaStream_t stream) {
  if (n == 0) return;
  const uint64_t first_group = global_offset >> 2;
  const uint64_t last_group = (global_offset + n - 1) >> 2;
  const uint64_t groups = last_group - first_group + 1;
  narrow_sr_kernel<<<blocks_for(groups), kThreadsPerBlock, 0, stream>>>(
      src, dst, n, key, global_offset, first_group, groups, op);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

// The per-format scalars, as functors (device lambdas would need --extended-lambda).
struct ToBf16Rne {
  __device__ uint16_t operator()(float x) const { return nm::f32_to_bf16_rne(x); }
};
struct ToFp16Rne {
  __device__ uint16_t operator()(float x) const { return nm::f32_to_fp16_rne(x); }
};
struct ToE4M3Rne {
  nm::Overflow overflow;
  __device__ uint8_t operator()(float x) const { return nm::f32_to_e4m3(x, overflow); }
};
struct ToE5M2Rne {
  nm::Overflow overflow;
  __device__ uint8_t operator()(float x) const { return nm::f32_to_e5m2(x, overflow); }
};

struct ToBf16Sr {
  __device__ uint16_t operator()(float x, uint32_t r) const { return nm::f32_to_bf16_sr(x, r); }
};
struct ToFp16Sr {
  __device__ uint16_t operator()(float x, uint32_t r) const { return nm::f32_to_fp16_sr(x, r); }
};
struct ToE4M3Sr {
  __device__ uint8_t operator()(float x, uint32_t r) const { return nm::f32_to_e4m3_sr(x, r); }
};
struct ToE5M2Sr {
  __device__ uint8_t operator()(float x, uint32_t r) const { return nm::f32_to_e5m2_sr(x, r); }
};

struct FromBf16 {
  __device__ float operator()(uint16_t h) const { return nm::bf16_to_f32(h); }
};
struct FromFp16 {
  __device__ float operator()(uint16_t h) const { return nm::fp16_to_f32(h); }
};
struct FromE4M3 {
  __device__ float operator()(uint8_t c) const { return nm::e4m3_to_f32(c); }
};
struct FromE5M2 {
  __device__ float operator()(uint8_t c) const { return nm::e5m2_to_f32(c); }
};

}  // namespace

void cast_f32_to_narrow_cuda(NarrowFormat format, const float* src, void* dst, size_t n,
                             nm::Overflow overflow, cudaStream_t stream) {
  switch (format) {
    case NarrowFormat::kBf16:
      return launch_elementwise(src, static_cast<uint16_t*>(dst), n, ToBf16Rne{}, stream);
    case NarrowFormat::kFp16:
      return launch_elementwise(src, static_cast<uint16_t*>(dst), n, ToFp16Rne{}, stream);
    case NarrowFormat::kE4M3:
      return launch_elementwise(src, static_cast<uint8_t*>(dst), n, ToE4M3Rne{overflow}, stream);
    case NarrowFormat::kE5M2:
      return launch_elementwise(src, static_cast<uint8_t*>(dst), n, ToE5M2Rne{overflow}, stream);
  }
}

void cast_f32_to_narrow_sr_cuda(NarrowFormat format, const float* src, void* dst, size_t n,
                                nm::RandomKey key, uint64_t global_offset, cudaStream_t stream) {
  switch (format) {
    case NarrowFormat::kBf16:
      return launch_narrow_sr(src, static_cast<uint16_t*>(dst), n, key, global_offset, ToBf16Sr{}, stream);
    case NarrowFormat::kFp16:
      return launch_narrow_sr(src, static_cast<uint16_t*>(dst), n, key, global_offset, ToFp16Sr{}, stream);
    case NarrowFormat::kE4M3:
      return launch_narrow_sr(src, static_cast<uint8_t*>(dst), n, key, global_offset, ToE4M3Sr{}, stream);
    case NarrowFormat::kE5M2:
      return launch_narrow_sr(src, static_cast<uint8_t*>(dst), n, key, global_offset, ToE5M2Sr{}, stream);
  }
}

void cast_narrow_to_f32_cuda(NarrowFormat format, const void* src, float* dst, size_t n,
                             cudaStream_t stream) {
  switch (format) {
    case NarrowFormat::kBf16:
      return launch_elementwise(static_cast<const uint16_t*>(src), dst, n, FromBf16{}, stream);
    case NarrowFormat::kFp16:
      return launch_elementwise(static_cast<const uint16_t*>(src), dst, n, FromFp16{}, stream);
    case NarrowFormat::kE4M3:
      return launch_elementwise(static_cast<const uint8_t*>(src), dst, n, FromE4M3{}, stream);
    case NarrowFormat::kE5M2:
      return launch_elementwise(static_cast<const uint8_t*>(src), dst, n, FromE5M2{}, stream);
  }
}

}  // namespace farthing::kernels

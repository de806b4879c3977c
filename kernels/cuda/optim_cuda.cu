// optim_cuda.cu — see optim_cuda.h.
//
// adamw_step_kernel: grid-stride over the CPU's chunks (chunk c covers the segment's part of
// global [c*256 - lead, (c+1)*256 - lead)); one CUDA block of 256 threads per chunk, thread t
// owning element t of it. The thread reads its gradient, weight/master and moments, calls
// numerics::adamw_update_element, and writes everything back; blocked moments first reduce
// the updated values' absmax over the block (8-bit) or half-block (4-bit) as integer bit
// patterns, exactly numerics::block_absmax_bits, then requantize with the numerics scalars
// against shared-memory maps. Stochastic-rounding words are generated once per Philox group
// into shared memory, as kernels/cpu's fill_random_bits does per chunk.
// Diagnostics: per-thread sums, a fixed-order reduction per CUDA block into a scratch array
// of per-block partials, which add_block_partials_kernel (one block, a fixed order) sums and adds
// to the caller's sums in device memory: nothing comes back to the host.
#include "kernels/cuda/optim_cuda.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/master_remainder.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr unsigned kThreads = nm::kQuantBlockElems;  // 256: one thread per element of a chunk
constexpr unsigned kWarps = kThreads / 32;
constexpr unsigned kWarpsPerBlock4 = nm::kQuant4BlockElems / 32;
constexpr unsigned kMapEntries = 256;
constexpr unsigned kMap4Entries = 16;
// A chunk of up to 256 elements at any global offset touches at most 65 Philox groups of 4.
constexpr unsigned kMaxGroupsPerChunk = kThreads / 4 + 1;
static_assert(kThreads == kMapEntries && kThreads % 32 == 0,
              "each thread stages one map entry and owns one element of a chunk");
static_assert(kThreads % nm::kQuant4BlockElems == 0 && nm::kQuant4BlockElems % 32 == 0,
              "a chunk holds whole 4-bit blocks, each made of whole warps");
// NOTE: every element's result depends only on its own inputs, its block's (a pure function
// of that block's inputs) and its global index, so the grid size can never change a bit of
// the state. It does fix the summation order of the diagnostics' double sums; it is a
// function of n alone, so those are deterministic too.
constexpr uint64_t kMaxBlocks = 1u << 15;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

unsigned grid_for(uint64_t work_blocks) { return unsigned(std::min<uint64_t>(work_blocks, kMaxBlocks)); }

struct StepBlockPartial {
  unsigned long long unchanged;
  double update_ss;
  double weight_ss;
};

struct GradBlockPartial {
  unsigned long long nonfinite;
  double sum_squares;
};

// The segment plus what the host derives from it once, exactly as adamw_step_cpu does.
struct StepArgs {
  AdamWSegmentCuda seg;
  uint64_t lead;    // global_offset % 256: how far chunk 0 starts into its 256-block
  uint64_t chunks;  // chunks of the segment
  nm::RandomKey key;
  bool stochastic;  // the weight is written stochastically rounded
};

__host__ __device__ bool is_blocked(MomentFormat format) {
  return format == MomentFormat::kBlock8 || format == MomentFormat::kBlock4;
}

__device__ float load_grad(const void* grad, GradFormat format, size_t i) {
  return format == GradFormat::kF32 ? static_cast<const float*>(grad)[i]
                                    : nm::bf16_to_f32(static_cast<const uint16_t*>(grad)[i]);
}

// What kernels/cpu's load_moment gives for segment element i (map: the shared copy).
__device__ float load_moment(const MomentRef& moment, const float* map, size_t i) {
  switch (moment.format) {
    case MomentFormat::kF32:
      return static_cast<const float*>(moment.values)[i];
    case MomentFormat::kBf16:
      return nm::bf16_to_f32(static_cast<const uint16_t*>(moment.values)[i]);
    case MomentFormat::kBlock8:
      return nm::dequantize_with_absmax(map, static_cast<const uint8_t*>(moment.values)[i],
                                        moment.absmax[i / nm::kQuantBlockElems]);
    case MomentFormat::kBlock4: {
      const unsigned code = (static_cast<const uint8_t*>(moment.values)[i >> 1] >> ((i & 1) * 4)) & 0xFu;
      return map[code] * moment.absmax[i / nm::kQuant4BlockElems];
    }
  }
  return 0.0f;
}

// NOTE: numerics::block_absmax_bits as a warp reduction: an unsigned max of |x| bit patterns
// is exact and order-free, and a NaN wins with its payload, as on the CPU. Inactive lanes
// pass 0, the scalar's starting value.
__device__ uint32_t warp_max_bits(uint32_t bits) {
  for (int offset = 16; offset > 0; offset >>= 1) bits = max(bits, __shfl_xor_sync(kFullMask, bits, offset));
  return bits;
}

// Writes segment element i (thread t of the chunk) of a moment, as kernels/cpu's store_moment.
// Called by every thread of the block (the 4-bit path shuffles); warp_max holds the warps'
// absmax bits of this moment when it is blocked.
__device__ void store_moment(const MomentRef& moment, const float* map, bool signed_map,
                             const uint32_t* warp_max, float x, size_t i, unsigned t, bool active) {
  switch (moment.format) {
    case MomentFormat::kF32:
      if (active) static_cast<float*>(moment.values)[i] = x;
      return;
    case MomentFormat::kBf16:
      // NOTE: round-to-nearest-even, as the CPU stores bf16 moments.
      if (active) static_cast<uint16_t*>(moment.values)[i] = nm::f32_to_bf16_rne(x);
      return;
    case MomentFormat::kBlock8: {
      uint32_t bits = 0;
#pragma unroll
      for (unsigned w = 0; w < kWarps; ++w) bits = max(bits, warp_max[w]);
      const float absmax = nm::bits_to_f32(bits);
      // Thread 0 is always active and i / 256 is the chunk's block (global_offset % 256 == 0).
      if (t == 0) moment.absmax[i / nm::kQuantBlockElems] = absmax;
      if (active) static_cast<uint8_t*>(moment.values)[i] = nm::quantize_with_absmax(map, signed_map, x, absmax);
      return;
    }
    case MomentFormat::kBlock4: {
      // Threads 0-127 form one 4-bit block, 128-255 the next (absent when the chunk is short).
      const unsigned first_warp = (t / nm::kQuant4BlockElems) * kWarpsPerBlock4;
      uint32_t bits = 0;
#pragma unroll
      for (unsigned w = 0; w < kWarpsPerBlock4; ++w) bits = max(bits, warp_max[first_warp + w]);
      const float absmax = nm::bits_to_f32(bits);
      if (active && t % nm::kQuant4BlockElems == 0) moment.absmax[i / nm::kQuant4BlockElems] = absmax;
      // An inactive lane's code is 0: the high nibble of an odd tail's last byte, as on the CPU.
      const unsigned code = active ? unsigned(nm::quantize4_with_absmax(map, x, absmax)) : 0u;
      const unsigned high = __shfl_down_sync(kFullMask, code, 1);  // element i + 1 (t even: same warp)
      if (active && t % 2 == 0) static_cast<uint8_t*>(moment.values)[i >> 1] = uint8_t(code | (high << 4));
      return;
    }
  }
}

// The CUDA block's partial of the step's diagnostics, in a fixed order: a shuffle tree per warp,
// then the warps in order; thread 0 writes it to partials[blockIdx.x]. Every thread calls it.
__device__ void write_step_block_partial(StepBlockPartial mine, StepBlockPartial* warp_partials,
                                         StepBlockPartial* __restrict__ partials) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) {
    mine.unchanged += __shfl_down_sync(kFullMask, mine.unchanged, offset);
    mine.update_ss += __shfl_down_sync(kFullMask, mine.update_ss, offset);
    mine.weight_ss += __shfl_down_sync(kFullMask, mine.weight_ss, offset);
  }
  if (lane == 0) warp_partials[warp] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    StepBlockPartial sum = warp_partials[0];
    for (unsigned w = 1; w < blockDim.x / 32; ++w) {
      sum.unchanged += warp_partials[w].unchanged;
      sum.update_ss += warp_partials[w].update_ss;
      sum.weight_ss += warp_partials[w].weight_ss;
    }
    partials[blockIdx.x] = sum;
  }
}

// What both step kernels do first: the step's scalars, then m's and v's quantization maps staged
// in shared memory (one entry per thread; blocks of kThreads == kMapEntries threads). False when
// the step changes nothing (non-finite gradients, clip_sums): the whole block returns before any
// barrier, since the scalars are the same for every thread.
__device__ bool begin_step(const AdamWSegmentCuda& seg, nm::AdamWScalars& scalars, float* map_m, float* map_v) {
  if (!scalars_for_step(seg, scalars)) return false;
  const unsigned t = threadIdx.x;
  if (seg.m.format == MomentFormat::kBlock8) map_m[t] = seg.signed_map[t];
  if (seg.m.format == MomentFormat::kBlock4 && t < kMap4Entries) map_m[t] = seg.signed_map4[t];
  if (seg.v.format == MomentFormat::kBlock8) map_v[t] = seg.unsigned_map[t];
  if (seg.v.format == MomentFormat::kBlock4 && t < kMap4Entries) map_v[t] = seg.unsigned_map4[t];
  __syncthreads();
  return true;
}

__global__ void __launch_bounds__(kThreads)
    adamw_step_kernel(const StepArgs args, StepBlockPartial* __restrict__ partials) {
  __shared__ float map_m[kMapEntries], map_v[kMapEntries];
  __shared__ uint32_t warp_max[2][kWarps];
  __shared__ uint32_t words[4 * kMaxGroupsPerChunk];
  __shared__ StepBlockPartial warp_partials[kWarps];

  const AdamWSegmentCuda& seg = args.seg;
  nm::AdamWScalars scalars;
  if (!begin_step(seg, scalars, map_m, map_v)) return;
  const unsigned t = threadIdx.x;
  const unsigned lane = t % 32, warp = t / 32;

  const bool reduce_absmax = is_blocked(seg.m.format) || is_blocked(seg.v.format);
  unsigned long long unchanged = 0;
  double update_ss = 0.0, weight_ss = 0.0;
  for (uint64_t c = blockIdx.x; c < args.chunks; c += gridDim.x) {
    const uint64_t begin = c == 0 ? 0 : c * kThreads - args.lead;
    const uint64_t chunk_end = (c + 1) * kThreads - args.lead;
    const uint64_t end = chunk_end < seg.n ? chunk_end : uint64_t(seg.n);
    const uint64_t count = end - begin;  // >= 1
    const size_t i = size_t(begin + t);
    const bool active = t < count;

    float g = 0.0f, p_old = 0.0f, m = 0.0f, v = 0.0f;
    uint16_t w_old = 0;
    if (active) {
      g = load_grad(seg.grad, seg.grad_format, i);
      w_old = seg.weight[i];
      if (seg.master_mode == MasterMode::kF32) {
        p_old = seg.master[i];
      } else if (seg.master_mode == MasterMode::kRemainder16) {
        p_old = nm::master_combine(w_old, seg.remainder[i]);
      } else {
        p_old = nm::bf16_to_f32(w_old);
      }
      m = load_moment(seg.m, map_m, i);
      v = load_moment(seg.v, map_v, i);
    }
    float p = p_old;
    if (active) {
      nm::adamw_update_element(scalars, g, p, m, v);
      // NOTE: the same fp32 squares as the CPU; summed in double here (see optim_cuda.h).
      const float du = p - p_old;
      update_ss += double(du * du);
      weight_ss += double(p_old * p_old);
    }

    if (reduce_absmax) {
      const uint32_t m_bits = warp_max_bits(active ? nm::f32_to_bits(m) & 0x7FFFFFFFu : 0u);
      const uint32_t v_bits = warp_max_bits(active ? nm::f32_to_bits(v) & 0x7FFFFFFFu : 0u);
      if (lane == 0) {
        warp_max[0][warp] = m_bits;
        warp_max[1][warp] = v_bits;
      }
    }
    if (args.stochastic) {
      // The words of every Philox group the chunk touches; element k of the chunk takes word
      // (global index - 4 * first group), i.e. random_bits_for_element(key, global index).
      const uint64_t global_begin = seg.global_offset + begin;
      const uint64_t first_group = global_begin >> 2;
      const uint64_t groups = ((global_begin + count - 1) >> 2) - first_group + 1;
      if (t < groups) {
        const nm::Philox4x32 w = nm::random_words_for_group(args.key, first_group + t);
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) words[4 * t + k] = w.v[k];
      }
    }
    __syncthreads();  // warp_max and words are complete

    store_moment(seg.m, map_m, true, warp_max[0], m, i, t, active);
    store_moment(seg.v, map_v, false, warp_max[1], v, i, t, active);
    if (active) {
      uint16_t w_new;
      if (seg.master_mode == MasterMode::kRemainder16) {
        const nm::MasterSplit split = nm::master_split(p);
        w_new = split.weight;
        seg.remainder[i] = split.remainder;
      } else if (args.stochastic) {
        const uint64_t global_begin = seg.global_offset + begin;
        w_new = nm::f32_to_bf16_sr(p, words[global_begin + t - 4 * (global_begin >> 2)]);
      } else {
        w_new = nm::f32_to_bf16_rne(p);
      }
      if (seg.master_mode == MasterMode::kF32) seg.master[i] = p;
      unchanged += w_new == w_old ? 1u : 0u;
      seg.weight[i] = w_new;
    }
    __syncthreads();  // warp_max and words are rewritten by the next chunk
  }

  write_step_block_partial(StepBlockPartial{unchanged, update_ss, weight_ss}, warp_partials, partials);
}

// ---- The 8-bit fast path: one warp per 256-element block, eight consecutive elements per lane.
//
// Both moments 8-bit (the recipes' optimizer state) and every array aligned for vector access:
// the block's absmax is a warp reduction (no block barrier inside the loop), each lane loads
// and stores its eight elements with 8- to 32-byte accesses, and draws its own two Philox groups
// (an 8-element run starting at a multiple of 8 of the global index covers exactly two groups),
// so no shared words either. Each element goes through the same numerics functions as in
// adamw_step_kernel, and the absmax is the same order-free max of bit patterns, so every bit of
// the state is that kernel's, and the CPU's.
constexpr unsigned kLaneElems = 8;
constexpr unsigned kWarpsPerCta8 = kThreads / 32;
static_assert(32 * kLaneElems == nm::kQuantBlockElems, "a warp covers one 8-bit block");

template <class T>
__device__ void load8(const T* p, T (&out)[kLaneElems], unsigned count) {
  if (count == kLaneElems) {
    static_assert(sizeof(T) * kLaneElems % 8 == 0, "whole 8-byte words");
    using Word = typename std::conditional<sizeof(T) * kLaneElems >= 16, uint4, uint2>::type;
    constexpr unsigned kWords = sizeof(T) * kLaneElems / sizeof(Word);
    const Word* src = reinterpret_cast<const Word*>(p);
    Word* dst = reinterpret_cast<Word*>(out);
#pragma unroll
    for (unsigned w = 0; w < kWords; ++w) dst[w] = src[w];
  } else {
#pragma unroll
    for (unsigned k = 0; k < kLaneElems; ++k) out[k] = k < count ? p[k] : T{};
  }
}

template <class T>
__device__ void store8(T* p, const T (&in)[kLaneElems], unsigned count) {
  if (count == kLaneElems) {
    using Word = typename std::conditional<sizeof(T) * kLaneElems >= 16, uint4, uint2>::type;
    constexpr unsigned kWords = sizeof(T) * kLaneElems / sizeof(Word);
    Word* dst = reinterpret_cast<Word*>(p);
    const Word* src = reinterpret_cast<const Word*>(in);
#pragma unroll
    for (unsigned w = 0; w < kWords; ++w) dst[w] = src[w];
  } else {
#pragma unroll
    for (unsigned k = 0; k < kLaneElems; ++k) {
      if (k < count) p[k] = in[k];
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    adamw_step_block8_kernel(const StepArgs args, StepBlockPartial* __restrict__ partials) {
  __shared__ float map_m[kMapEntries], map_v[kMapEntries];
  __shared__ StepBlockPartial warp_partials[kWarpsPerCta8];

  const AdamWSegmentCuda& seg = args.seg;
  nm::AdamWScalars scalars;
  if (!begin_step(seg, scalars, map_m, map_v)) return;
  const unsigned t = threadIdx.x;
  const unsigned lane = t % 32, warp = t / 32;

  uint8_t* const m_codes = static_cast<uint8_t*>(seg.m.values);
  uint8_t* const v_codes = static_cast<uint8_t*>(seg.v.values);
  unsigned long long unchanged = 0;
  double update_ss = 0.0, weight_ss = 0.0;
  // args.chunks blocks of 256 (global_offset % 256 == 0, so lead is 0); warp-strided.
  for (uint64_t b = uint64_t(blockIdx.x) * kWarpsPerCta8 + warp; b < args.chunks;
       b += uint64_t(gridDim.x) * kWarpsPerCta8) {
    const uint64_t block_begin = b * nm::kQuantBlockElems;
    const uint64_t first = block_begin + lane * kLaneElems;  // this lane's first element
    const uint64_t left = first < seg.n ? seg.n - first : 0;
    const unsigned count = unsigned(left < kLaneElems ? left : kLaneElems);  // 0 to 8 active

    float g[kLaneElems], p_old[kLaneElems];
    uint16_t w_old[kLaneElems];
    uint8_t mc[kLaneElems], vc[kLaneElems];
    if (seg.grad_format == GradFormat::kF32) {
      load8(static_cast<const float*>(seg.grad) + first, g, count);
    } else {
      uint16_t gb[kLaneElems];
      load8(static_cast<const uint16_t*>(seg.grad) + first, gb, count);
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) g[k] = nm::bf16_to_f32(gb[k]);
    }
    load8(seg.weight + first, w_old, count);
    if (seg.master_mode == MasterMode::kF32) {
      load8(seg.master + first, p_old, count);
    } else if (seg.master_mode == MasterMode::kRemainder16) {
      uint16_t rem[kLaneElems];
      load8(seg.remainder + first, rem, count);
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) p_old[k] = nm::master_combine(w_old[k], rem[k]);
    } else {
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) p_old[k] = nm::bf16_to_f32(w_old[k]);
    }
    load8(m_codes + first, mc, count);
    load8(v_codes + first, vc, count);
    const float m_absmax_old = seg.m.absmax[b], v_absmax_old = seg.v.absmax[b];

    float p[kLaneElems], m[kLaneElems], v[kLaneElems];
    uint32_t m_bits = 0, v_bits = 0;  // inactive elements pass 0, as in adamw_step_kernel
#pragma unroll
    for (unsigned k = 0; k < kLaneElems; ++k) {
      p[k] = p_old[k];
      m[k] = nm::dequantize_with_absmax(map_m, mc[k], m_absmax_old);
      v[k] = nm::dequantize_with_absmax(map_v, vc[k], v_absmax_old);
      if (k < count) {
        nm::adamw_update_element(scalars, g[k], p[k], m[k], v[k]);
        const float du = p[k] - p_old[k];
        update_ss += double(du * du);
        weight_ss += double(p_old[k] * p_old[k]);
        m_bits = max(m_bits, nm::f32_to_bits(m[k]) & 0x7FFFFFFFu);
        v_bits = max(v_bits, nm::f32_to_bits(v[k]) & 0x7FFFFFFFu);
      }
    }
    const float m_absmax = nm::bits_to_f32(warp_max_bits(m_bits));
    const float v_absmax = nm::bits_to_f32(warp_max_bits(v_bits));
    if (lane == 0) {
      seg.m.absmax[b] = m_absmax;
      seg.v.absmax[b] = v_absmax;
    }
#pragma unroll
    for (unsigned k = 0; k < kLaneElems; ++k) {
      mc[k] = nm::quantize_with_absmax(map_m, true, m[k], m_absmax);
      vc[k] = nm::quantize_with_absmax(map_v, false, v[k], v_absmax);
    }
    store8(m_codes + first, mc, count);
    store8(v_codes + first, vc, count);

    uint16_t w_new[kLaneElems];
    if (seg.master_mode == MasterMode::kRemainder16) {
      uint16_t rem[kLaneElems];
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) {
        const nm::MasterSplit split = nm::master_split(p[k]);
        w_new[k] = split.weight;
        rem[k] = split.remainder;
      }
      store8(seg.remainder + first, rem, count);
    } else if (args.stochastic) {
      // Elements first .. first + 7 of the segment are global group g0's four words, then g0 + 1's.
      const uint64_t g0 = (seg.global_offset + first) >> 2;
      const nm::Philox4x32 lo = nm::random_words_for_group(args.key, g0);
      const nm::Philox4x32 hi = nm::random_words_for_group(args.key, g0 + 1);
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) w_new[k] = nm::f32_to_bf16_sr(p[k], k < 4 ? lo.v[k] : hi.v[k - 4]);
    } else {
#pragma unroll
      for (unsigned k = 0; k < kLaneElems; ++k) w_new[k] = nm::f32_to_bf16_rne(p[k]);
    }
    if (seg.master_mode == MasterMode::kF32) store8(seg.master + first, p, count);
#pragma unroll
    for (unsigned k = 0; k < kLaneElems; ++k) unchanged += (k < count && w_new[k] == w_old[k]) ? 1u : 0u;
    store8(seg.weight + first, w_new, count);
  }

  write_step_block_partial(StepBlockPartial{unchanged, update_ss, weight_ss}, warp_partials, partials);
}

bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The fast path's preconditions: both moments 8-bit, and each array aligned for its lanes' vector
// accesses (8 elements at multiples of 8: 32 bytes of fp32, 16 of bf16, 8 of codes). cudaMalloc's
// buffers are; a segment's offset into one is a multiple of 256 elements.
bool block8_fast_path(const AdamWSegmentCuda& seg) {
  if (seg.m.format != MomentFormat::kBlock8 || seg.v.format != MomentFormat::kBlock8) return false;
  return aligned_to(seg.grad, 16) && aligned_to(seg.weight, 16) && aligned_to(seg.m.values, 8) &&
         aligned_to(seg.v.values, 8) &&
         (seg.master_mode != MasterMode::kF32 || aligned_to(seg.master, 16)) &&
         (seg.master_mode != MasterMode::kRemainder16 || aligned_to(seg.remainder, 16));
}

__global__ void __launch_bounds__(kThreads)
    grad_partials_kernel(const void* __restrict__ grad, GradFormat format, size_t n,
                         GradBlockPartial* __restrict__ partials) {
  __shared__ GradBlockPartial warp_partials[kWarps];
  unsigned long long nonfinite = 0;
  double sum_squares = 0.0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = load_grad(grad, format, i);
    const double x = double(g);
    sum_squares += x * x;  // exact: a float's square fits a double
    nonfinite += (nm::f32_to_bits(g) & 0x7F800000u) == 0x7F800000u ? 1u : 0u;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    nonfinite += __shfl_down_sync(kFullMask, nonfinite, offset);
    sum_squares += __shfl_down_sync(kFullMask, sum_squares, offset);
  }
  if (threadIdx.x % 32 == 0) warp_partials[threadIdx.x / 32] = GradBlockPartial{nonfinite, sum_squares};
  __syncthreads();
  if (threadIdx.x == 0) {
    GradBlockPartial sum = warp_partials[0];
    for (unsigned w = 1; w < kWarps; ++w) {
      sum.nonfinite += warp_partials[w].nonfinite;
      sum.sum_squares += warp_partials[w].sum_squares;
    }
    partials[blockIdx.x] = sum;
  }
}

[[noreturn]] void fail(const std::string& message) { throw Error("adamw_step_cuda: " + message); }

void check_moment(const MomentRef& moment, const char* name, uint64_t global_offset, const float* map,
                  const float* map4) {
  if (moment.values == nullptr) fail(error_detail::concat(name, ".values is null"));
  if (!is_blocked(moment.format)) return;
  if (moment.absmax == nullptr) fail(error_detail::concat(name, ".absmax is null for a blocked format"));
  if (global_offset % nm::kQuantBlockElems != 0) {
    fail(error_detail::concat(name, " is block-quantized but the segment starts at global offset ", global_offset,
                              ", not a multiple of ", nm::kQuantBlockElems));
  }
  if (moment.format == MomentFormat::kBlock8 && map == nullptr) fail(error_detail::concat(name, "'s 8-bit map is null"));
  if (moment.format == MomentFormat::kBlock4 && map4 == nullptr) fail(error_detail::concat(name, "'s 4-bit map is null"));
}

__device__ StepBlockPartial operator+(const StepBlockPartial& a, const StepBlockPartial& b) {
  return StepBlockPartial{a.unchanged + b.unchanged, a.update_ss + b.update_ss, a.weight_ss + b.weight_ss};
}
__device__ GradBlockPartial operator+(const GradBlockPartial& a, const GradBlockPartial& b) {
  return GradBlockPartial{a.nonfinite + b.nonfinite, a.sum_squares + b.sum_squares};
}
__device__ StepBlockPartial shuffle_down(const StepBlockPartial& p, int offset) {
  return StepBlockPartial{__shfl_down_sync(kFullMask, p.unchanged, offset),
                          __shfl_down_sync(kFullMask, p.update_ss, offset),
                          __shfl_down_sync(kFullMask, p.weight_ss, offset)};
}
__device__ GradBlockPartial shuffle_down(const GradBlockPartial& p, int offset) {
  return GradBlockPartial{__shfl_down_sync(kFullMask, p.nonfinite, offset),
                          __shfl_down_sync(kFullMask, p.sum_squares, offset)};
}
__device__ void add_to_sums(const StepBlockPartial& p, int64_t elements, AdamWPartials* sums) {
  AdamWPartials segment;
  segment.elements = elements;
  segment.weights_unchanged = int64_t(p.unchanged);
  segment.update_sum_squares = p.update_ss;
  segment.weight_sum_squares = p.weight_ss;
  add_partials(*sums, segment);
}
__device__ void add_to_sums(const GradBlockPartial& p, int64_t /*elements*/, GradPartials* sums) {
  GradPartials segment;
  segment.sum_squares = p.sum_squares;
  segment.nonfinite = int64_t(p.nonfinite);
  add_partials(*sums, segment);
}

// One block: the grid's block partials summed in a fixed order (each thread a strided run in
// block order, a shuffle tree per warp, then the warps in order) and added to *sums, where the
// step's sums stay, on the device, until the host reads them once per step. Nothing is added when
// `skipped_if` (a step's clip_sums) counts non-finite gradients: the step kernel did nothing.
template <class BlockPartial, class Sums>
__global__ void __launch_bounds__(kThreads)
    add_block_partials_kernel(const BlockPartial* __restrict__ partials, unsigned blocks, int64_t elements, Sums* sums,
                              const GradPartials* skipped_if) {
  if (skipped_if != nullptr && skipped_if->nonfinite > 0) return;
  __shared__ BlockPartial warp_sums[kWarps];
  BlockPartial acc{};
  for (unsigned b = threadIdx.x; b < blocks; b += kThreads) acc = acc + partials[b];
  for (int offset = 16; offset > 0; offset >>= 1) acc = acc + shuffle_down(acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    BlockPartial total = warp_sums[0];
    for (unsigned w = 1; w < kWarps; ++w) total = total + warp_sums[w];
    add_to_sums(total, elements, sums);
  }
}

}  // namespace

size_t optim_scratch_bytes() { return size_t(kMaxBlocks) * std::max(sizeof(StepBlockPartial), sizeof(GradBlockPartial)); }

void adamw_step_cuda(const AdamWSegmentCuda& seg, AdamWPartials* sums, void* scratch, cudaStream_t stream) {
  if (seg.n == 0) return;
  if (seg.grad == nullptr || seg.weight == nullptr) fail("grad and weight must be device pointers, got null");
  if (sums == nullptr || scratch == nullptr) fail("sums and scratch must be device pointers, got null");
  if (seg.master_mode == MasterMode::kF32 && seg.master == nullptr) fail("master_mode kF32 needs master");
  if (seg.master_mode == MasterMode::kRemainder16 && seg.remainder == nullptr) {
    fail("master_mode kRemainder16 needs remainder");
  }
  check_moment(seg.m, "m", seg.global_offset, seg.signed_map, seg.signed_map4);
  check_moment(seg.v, "v", seg.global_offset, seg.unsigned_map, seg.unsigned_map4);

  // Derived exactly as in adamw_step_cpu.
  StepArgs args;
  args.seg = seg;
  args.lead = seg.global_offset % kThreads;
  args.chunks = (uint64_t(seg.n) + args.lead + kThreads - 1) / kThreads;
  const bool has_master = seg.master_mode == MasterMode::kF32;
  args.stochastic = seg.master_mode != MasterMode::kRemainder16 && seg.weight_rounding == WeightRounding::kStochastic;
  args.key = nm::RandomKey{seg.seed, seg.step,
                           has_master ? nm::RandomPurpose::kWeightCast : nm::RandomPurpose::kMasterFreeUpdate};

  StepBlockPartial* partials = static_cast<StepBlockPartial*>(scratch);
  unsigned blocks;
  if (block8_fast_path(seg)) {
    blocks = grid_for((args.chunks + kWarpsPerCta8 - 1) / kWarpsPerCta8);
    adamw_step_block8_kernel<<<blocks, kThreads, 0, stream>>>(args, partials);
  } else {
    blocks = grid_for(args.chunks);
    adamw_step_kernel<<<blocks, kThreads, 0, stream>>>(args, partials);
  }
  FARTHING_CUDA_CHECK(cudaGetLastError());
  add_block_partials_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, int64_t(seg.n), sums, seg.clip_sums);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

void grad_partials_cuda(const void* grad, GradFormat format, size_t n, GradPartials* sums, void* scratch,
                        cudaStream_t stream) {
  if (n == 0) return;
  if (grad == nullptr) throw Error("grad_partials_cuda: grad is null");
  if (sums == nullptr || scratch == nullptr) throw Error("grad_partials_cuda: sums and scratch must be device pointers");
  const unsigned blocks = grid_for((uint64_t(n) + kThreads - 1) / kThreads);
  GradBlockPartial* partials = static_cast<GradBlockPartial*>(scratch);
  grad_partials_kernel<<<blocks, kThreads, 0, stream>>>(grad, format, n, partials);
  FARTHING_CUDA_CHECK(cudaGetLastError());
  add_block_partials_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, int64_t(n), sums,
                                                        static_cast<const GradPartials*>(nullptr));
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

}  // namespace farthing::kernels

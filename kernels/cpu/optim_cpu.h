// optim_cpu.h — the fused AdamW step over one segment of a shard, on the host.
//
// One pass per element: read the gradient (f32 or bf16) → dequantize m and v (f32, bf16 or
// 8-bit blocks) → numerics::adamw_update_element → requantize → write the fp32 master, then
// cast it to the bf16 working weight (round to nearest, or stochastic); or split the master
// into the bf16 weight and a 16-bit remainder (Transformer Engine's lossless 2-byte master); or, with no master,
// update the bf16 weight in fp32 and write it back stochastically rounded. Work goes in chunks
// aligned to 256-element blocks of the global flat space, each held in stack buffers (no
// full-size temporaries); chunks are split over OpenMP threads, and every element's result
// depends only on its own inputs and its global index, so thread count and sharding never
// change a bit. Where the build has AVX2 and both moments are 8-bit blocks, or both fp32, or
// both bf16, each chunk runs the hand-vectorized loop of optim_cpu_avx2.h instead (same bits;
// ~1.7x faster on Zen 3); the portable loops here stay the fallback and the reference. Relies on: numerics/adamw_update.h,
// stochastic_round.h, bf16.h, block_quant.h, block_quant_cpu.h, optim_cpu_avx2.h. Tested by:
// tests/optim/* (golden vs torch, 8-bit vs fp32 twin, SR vs RN, partition invariance, AVX2 ==
// portable).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/master_remainder.h"

namespace farthing::kernels {

enum class GradFormat : uint8_t { kF32, kBf16 };
// kBlock8: 8-bit codes, one fp32 absmax per 256; kBlock4: two 4-bit codes per byte (element 2j
// in the low nibble), one fp32 absmax per 128.
enum class MomentFormat : uint8_t { kF32, kBf16, kBlock8, kBlock4 };
// kF32: an fp32 master; kRemainder16: the master is the bf16 weight plus a 16-bit remainder
// (numerics/master_remainder.h, lossless, weight rounded to nearest with ties away from zero);
// kNone: no master, the bf16 weight is updated in fp32 and written back stochastically rounded.
enum class MasterMode : uint8_t { kF32, kRemainder16, kNone };
enum class WeightRounding : uint8_t { kNearest, kStochastic };

// One moment (m or v) of a segment.
struct MomentRef {
  MomentFormat format = MomentFormat::kF32;
  void* values = nullptr;   // float*, uint16_t* (bf16 bits) or uint8_t* (codes), n elements
  float* absmax = nullptr;  // kBlock8 / kBlock4: one per 256- / 128-element block of the segment
};

struct AdamWSegmentCpu {
  size_t n = 0;
  uint64_t global_offset = 0;  // global flat index of element 0 (a multiple of 256 for kBlock8)
  const void* grad = nullptr;
  GradFormat grad_format = GradFormat::kF32;
  uint16_t* weight = nullptr;  // bf16 working weight (read for diagnostics, written)
  float* master = nullptr;        // MasterMode::kF32 only
  uint16_t* remainder = nullptr;  // MasterMode::kRemainder16 only
  MasterMode master_mode = MasterMode::kF32;
  WeightRounding weight_rounding = WeightRounding::kNearest;  // master -> weight cast
  MomentRef m, v;
  numerics::AdamWScalars scalars{};
  uint64_t seed = 0;  // stochastic rounding key: (seed, step, purpose, global index)
  uint32_t step = 0;
  const QuantMapCpu* signed_map = nullptr;    // kBlock8: map of m
  const QuantMapCpu* unsigned_map = nullptr;  // kBlock8: map of v
  const float* signed_map4 = nullptr;         // kBlock4: 16-entry map of m
  const float* unsigned_map4 = nullptr;       // kBlock4: 16-entry map of v
};

// Per-segment sums for the step diagnostics (summed over segments and ranks by the caller).
struct AdamWPartials {
  int64_t elements = 0;
  int64_t weights_unchanged = 0;    // bf16 weight bits identical before and after
  double update_sum_squares = 0.0;  // sum (p_new - p_old)^2, in fp32 values before the cast
  double weight_sum_squares = 0.0;  // sum p_old^2
};

// Which loops run the step. kAuto: the hand-vectorized AVX2 chunk (optim_cpu_avx2.h) where
// the build has AVX2 and m and v are both kBlock8, both kF32 or both kBf16; the portable loops
// otherwise. kPortable: the
// portable loops always (the reference tests compare the AVX2 path with). Same bits either way.
enum class CpuKernelPath : uint8_t { kAuto, kPortable };

AdamWPartials adamw_step_cpu(const AdamWSegmentCpu& segment, CpuKernelPath path = CpuKernelPath::kAuto);
// True where this build has the AVX2 chunk (kAuto and kPortable then run different code).
bool adamw_step_cpu_has_avx2();

// Sum of squares and count of non-finite values of a gradient array (the clipping and
// non-finite-check pass that runs before the step).
struct GradPartials {
  double sum_squares = 0.0;
  int64_t nonfinite = 0;
};
GradPartials grad_partials_cpu(const void* grad, GradFormat format, size_t n);

// m and v of a segment as fp32 values (for tests and inspection; not on the step's path).
// map: the 8-bit map (kBlock8); map4: the 16-entry map (kBlock4).
void moment_to_f32_cpu(const MomentRef& moment, const QuantMapCpu* map, const float* map4, float* dst, size_t n);

}  // namespace farthing::kernels

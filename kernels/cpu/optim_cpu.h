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
// stochastic_round.h, bf16.h, block_quant.h, adamw_segment.h, block_quant_cpu.h, optim_cpu_avx2.h. Tested by:
// tests/optim/* (golden vs torch, 8-bit vs fp32 twin, SR vs RN, partition invariance, AVX2 ==
// portable).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/numerics/adamw_segment.h"
#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/master_remainder.h"

namespace farthing::kernels {

// The segment (numerics/adamw_segment.h) with the host lookup tables of the quantization maps.
struct AdamWSegmentCpu : AdamWSegment {
  const QuantMapCpu* signed_map = nullptr;    // kBlock8: map of m
  const QuantMapCpu* unsigned_map = nullptr;  // kBlock8: map of v
  const float* signed_map4 = nullptr;         // kBlock4: 16-entry map of m
  const float* unsigned_map4 = nullptr;       // kBlock4: 16-entry map of v
};

// Which loops run the step. kAuto: the hand-vectorized AVX2 chunk (optim_cpu_avx2.h) where
// the build has AVX2 and m and v are both kBlock8, both kF32 or both kBf16; the portable loops
// otherwise. kPortable: the
// portable loops always (the reference tests compare the AVX2 path with). Same bits either way.
enum class CpuKernelPath : uint8_t { kAuto, kPortable };

AdamWPartials adamw_step_cpu(const AdamWSegmentCpu& segment, CpuKernelPath path = CpuKernelPath::kAuto);
// True where this build has the AVX2 chunk (kAuto and kPortable then run different code).
bool adamw_step_cpu_has_avx2();

// Sum of squares and count of non-finite values of a gradient array.
GradPartials grad_partials_cpu(const void* grad, GradFormat format, size_t n);

// m and v of a segment as fp32 values (for tests and inspection; not on the step's path).
// map: the 8-bit map (kBlock8); map4: the 16-entry map (kBlock4).
void moment_to_f32_cpu(const MomentRef& moment, const QuantMapCpu* map, const float* map4, float* dst, size_t n);

}  // namespace farthing::kernels

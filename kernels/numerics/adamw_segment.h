// adamw_segment.h — what one fused AdamW step over a segment of a shard reads and writes: the
// argument every backend's optimizer kernel takes (kernels/cpu/optim_cpu.h, kernels/cuda/
// optim_cuda.h, Backend::adamw_step), written once so that the formats and fields cannot drift.
// A backend adds only its own quantization tables (host lookup tables, or device copies).
// Relies on: adamw_update.h, grad_clip_rule.h. Tested by: tests/optim/* and tests/kernels/test_cuda_optim_parity.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/grad_clip_rule.h"

namespace farthing::kernels {

enum class GradFormat : uint8_t { kF32, kBf16 };
// kBlock8: 8-bit codes, one fp32 absmax per 256; kBlock4: two 4-bit codes per byte (element 2j
// in the low nibble), one fp32 absmax per 128.
enum class MomentFormat : uint8_t { kF32, kBf16, kBlock8, kBlock4 };
// kF32: an fp32 master; kRemainder16: the master is the bf16 weight plus a 16-bit remainder
// (numerics/master_remainder.h, lossless, weight rounded to nearest with ties away from zero);
// kNone: no master, the bf16 weight is updated in fp32 and written back rounded as weight_rounding
// says: stochastically (unbiased: small updates survive on average), or to nearest (pure bf16
// training: an update below half a bf16 spacing is lost; `farthing bench precision` measures it).
enum class MasterMode : uint8_t { kF32, kRemainder16, kNone };
enum class WeightRounding : uint8_t { kNearest, kStochastic };

// One moment (m or v) of a segment.
struct MomentRef {
  MomentFormat format = MomentFormat::kF32;
  void* values = nullptr;   // float*, uint16_t* (bf16 bits) or uint8_t* (codes), n elements
  float* absmax = nullptr;  // kBlock8 / kBlock4: one per 256- / 128-element block of the segment
};

// Sum of squares and count of non-finite values of a gradient array (the clipping and
// non-finite-check pass that runs before the step).
struct GradPartials {
  double sum_squares = 0.0;
  int64_t nonfinite = 0;
};

// Every pointer addresses the memory of the backend that runs the step. For kBlock8 and kBlock4
// moments global_offset is a multiple of 256.
struct AdamWSegment {
  size_t n = 0;
  uint64_t global_offset = 0;  // global flat index of element 0 (a multiple of 256 for blocked moments)
  const void* grad = nullptr;
  GradFormat grad_format = GradFormat::kF32;
  uint16_t* weight = nullptr;     // bf16 working weight (read for diagnostics, written)
  float* master = nullptr;        // MasterMode::kF32 only
  uint16_t* remainder = nullptr;  // MasterMode::kRemainder16 only
  MasterMode master_mode = MasterMode::kF32;
  WeightRounding weight_rounding = WeightRounding::kNearest;  // the new weight's cast (kF32, kNone)
  MomentRef m, v;
  numerics::AdamWScalars scalars{};
  uint64_t seed = 0;  // stochastic rounding key: (seed, step, purpose, global index)
  uint32_t step = 0;
  // Optional, for clipping decided on the device (AdamW::step_clipped_on_device): the whole
  // step's gradient sums, in this backend's memory. When set, scalars.grad_scale gives way to the
  // clip rule over them (numerics/grad_clip_rule.h: the host's bits), and a non-finite count makes
  // the step change nothing and add no partials: no host has to read the norm first.
  const GradPartials* clip_sums = nullptr;
  double max_grad_norm = 0.0;  // 0: no clipping
  double loss_scale = 1.0;     // the gradients carry it
};

// The scalars a kernel steps `seg` with: seg.scalars, or with clip_sums their clipped gradient
// scale; false when clip_sums count non-finite gradients (the kernel then changes nothing).
FARTHING_HD bool scalars_for_step(const AdamWSegment& seg, numerics::AdamWScalars& scalars) {
  scalars = seg.scalars;
  if (seg.clip_sums == nullptr) return true;
  const GradPartials sums = *seg.clip_sums;
  if (sums.nonfinite > 0) return false;
  scalars.grad_scale = float(numerics::grad_clip_of(sums.sum_squares, seg.max_grad_norm, seg.loss_scale).grad_scale);
  return true;
}

// Per-segment sums for the step diagnostics (summed over segments and ranks by the caller).
struct AdamWPartials {
  int64_t elements = 0;
  int64_t weights_unchanged = 0;    // bf16 weight bits identical before and after
  double update_sum_squares = 0.0;  // sum (p_new - p_old)^2, in fp32 values before the cast
  double weight_sum_squares = 0.0;  // sum p_old^2
};

// The backends add each segment's partials to sums kept in the device's own memory (so that
// nothing returns to the host inside a step); these are the one definition of that addition.
FARTHING_HD void add_partials(AdamWPartials& sums, const AdamWPartials& p) {
  sums.elements += p.elements;
  sums.weights_unchanged += p.weights_unchanged;
  sums.update_sum_squares += p.update_sum_squares;
  sums.weight_sum_squares += p.weight_sum_squares;
}
FARTHING_HD void add_partials(GradPartials& sums, const GradPartials& p) {
  sums.sum_squares += p.sum_squares;
  sums.nonfinite += p.nonfinite;
}

}  // namespace farthing::kernels

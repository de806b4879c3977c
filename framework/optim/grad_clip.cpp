// grad_clip.cpp — see grad_clip.h.
#include "framework/optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/core/error.h"
#include "kernels/numerics/grad_clip_rule.h"

namespace farthing::optim {

void check_grad_options(const GradOptions& options) {
  FARTHING_CHECK(std::isfinite(options.loss_scale) && options.loss_scale > 0.0, "loss_scale (",
                 options.loss_scale, ") must be finite and > 0");
  FARTHING_CHECK(options.max_grad_norm >= 0.0, "max_grad_norm (", options.max_grad_norm,
                 ") must be >= 0 (0 turns clipping off)");
}

GradReport make_grad_report(double global_sum_squares, int64_t global_nonfinite, const GradOptions& options) {
  check_grad_options(options);
  const numerics::GradClip clip =
      numerics::grad_clip_of(global_sum_squares, options.max_grad_norm, options.loss_scale);
  GradReport r;
  r.nonfinite = global_nonfinite;
  r.grad_norm = clip.grad_norm;
  r.clip_factor = clip.clip_factor;
  r.grad_scale = clip.grad_scale;
  return r;
}

namespace {

void add_magnitude(GradHistogram& h, float g) {
  if (!std::isfinite(g)) {
    ++h.nonfinite;
  } else if (g == 0.0f) {
    ++h.zeros;
  } else {
    // NOTE: in double, so dividing out the scale neither rounds nor underflows: ilogb is then
    // floor(log2 |g| / scale) exactly for the power-of-two scales the loss scaler uses.
    const int e = std::ilogb(std::fabs(double(g)) / h.loss_scale);
    ++h.counts[size_t(std::clamp(e, GradHistogram::kMinLog2, GradHistogram::kMaxLog2) - GradHistogram::kMinLog2)];
  }
}

}  // namespace

void add_grad_magnitudes(GradHistogram& h, const float* g, int64_t n) {
  for (int64_t i = 0; i < n; ++i) add_magnitude(h, g[i]);
}

void add_grad_magnitudes_bf16(GradHistogram& h, const uint16_t* g, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t(g[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    add_magnitude(h, f);
  }
}

}  // namespace farthing::optim

// loss_scaler.cpp — see loss_scaler.h.
#include "framework/optim/loss_scaler.h"

#include "framework/core/error.h"

namespace farthing::optim {

LossScaler::LossScaler(const LossScalerOptions& options, bool enabled)
    : options_(options), enabled_(enabled), scale_(options.initial_scale) {
  FARTHING_CHECK(options.initial_scale > 0.0, "loss_scale.initial must be > 0, got ", options.initial_scale);
  FARTHING_CHECK(options.growth_factor >= 1.0, "loss_scale.growth_factor must be >= 1, got ", options.growth_factor);
  FARTHING_CHECK(options.backoff_factor > 0.0 && options.backoff_factor < 1.0,
                 "loss_scale.backoff_factor must be in (0, 1), got ", options.backoff_factor);
  FARTHING_CHECK(options.growth_interval >= 1, "loss_scale.growth_interval must be >= 1, got ",
                 options.growth_interval);
}

void LossScaler::update(bool found_nonfinite) {
  if (!enabled_) return;
  if (found_nonfinite) {
    scale_ *= options_.backoff_factor;
    clean_steps_ = 0;
    return;
  }
  if (++clean_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    clean_steps_ = 0;
  }
}

void LossScaler::restore(double scale, int64_t clean_steps) {
  FARTHING_CHECK(scale > 0.0 && clean_steps >= 0, "loss scaler state (scale ", scale, ", clean steps ",
                 clean_steps, ") is invalid");
  scale_ = scale;
  clean_steps_ = clean_steps;
}

}  // namespace farthing::optim

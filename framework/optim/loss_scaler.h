// loss_scaler.h — dynamic loss scaling for fp16 compute (docs/numerics.md §5), as PyTorch's
// GradScaler: the loss's gradient is multiplied by scale(); a step whose gradients hold any
// inf/NaN is skipped and the scale multiplied by backoff_factor; after growth_interval
// consecutive clean steps it is multiplied by growth_factor. Gradients are unscaled in fp32
// inside the fused step (GradOptions::loss_scale), before clipping.
// The state (scale, clean-step count) is part of a checkpoint, so resume is exact.
// Relies on: core/error.h. Tested by: tests/optim/test_loss_scaler.cpp.
#pragma once

#include <cstdint>

namespace farthing::optim {

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  // enabled = false (fp32, bf16): scale() is 1 and update() does nothing.
  LossScaler(const LossScalerOptions& options, bool enabled);

  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }
  int64_t clean_steps() const { return clean_steps_; }
  // After inspecting a step's gradients: found_nonfinite means the step was skipped.
  void update(bool found_nonfinite);
  // Checkpoint state.
  void restore(double scale, int64_t clean_steps);

 private:
  LossScalerOptions options_;
  bool enabled_;
  double scale_;
  int64_t clean_steps_ = 0;
};

}  // namespace farthing::optim

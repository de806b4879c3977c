// step_diagnostics.h — what one optimizer step reports (global over all ranks).
// Tested by: tests/optim/test_sr_vs_rn.cpp and the other tests/optim tests that read it.
#pragma once

#include <cstdint>

namespace farthing::optim {

struct StepDiagnostics {
  int64_t step = 0;                 // the step just taken, from 1
  double lr = 0.0;                  // group 0's learning rate this step
  double grad_norm = 0.0;           // global, unscaled, before clipping
  double clip_factor = 1.0;
  int64_t nonfinite_grads = 0;      // always 0 for a step taken (the step refuses otherwise)
  int64_t elements = 0;             // parameters stepped, all ranks
  int64_t weights_unchanged = 0;    // bf16 weights whose bits the step did not change
  double unchanged_fraction = 0.0;  // weights_unchanged / elements: the "weight sticking" measure
  double update_rms_ratio = 0.0;    // rms(p_new - p_old) / rms(p_old), fp32 values
};

}  // namespace farthing::optim

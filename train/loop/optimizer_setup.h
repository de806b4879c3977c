// optimizer_setup.h — a recipe's optimizer section over a model's flat layout: the parameter
// groups (decay / no_decay) and the ranges of the global flat space they cover.
//
// Consecutive tensors of one unit that the layout packs back to back (q/k/v, gate/up) and that
// share a group become one range, so the whole fused matrix starts on the 256-element block boundary
// its first tensor got (flat_layout.h) and can keep 8-bit state. A range that could be
// quantized but starts off a block boundary keeps fp32 state (counted in `demoted`).
// Relies on: models/common/flat_layout.h, framework/optim, train/recipe/run_config.h.
// Tested by: tests/train/loop/test_optimizer_setup.cpp, and the trainer tests.
#pragma once

#include <cstdint>

#include "framework/optim/optim_config.h"
#include "train/recipe/run_config.h"
#include "models/common/flat_layout.h"

namespace farthing::train {

struct OptimizerSetup {
  optim::OptimizerConfig config;
  int64_t demoted = 0;  // ranges kept at fp32 state because they start off a block boundary
};

OptimizerSetup make_optimizer_setup(const models::FlatLayout& layout, const recipe::OptimizerSection& section,
                                    uint64_t seed);

}  // namespace farthing::train

// plan_roofline.h — `farthing plan RECIPE --roofline DEVICE`: the recipe's optimizer step on
// paper at a GPU's datasheet rates (framework/run/train/roofline.h), printed as a table; with
// --measure-ops, each row's time measured on this machine's device beside it (plan_roofline_measure.h).
// Relies on: framework/run/train/{roofline,memory_estimate}.h. Tested by: tests/run/train/test_roofline.cpp
// (the arithmetic); the table by running it.
#pragma once

#include "framework/run/recipe/run_config.h"
#include "framework/run/train/memory_estimate.h"
#include "framework/run/train/roofline.h"
#include "models/common/model_config.h"

namespace farthing::cli {

void print_roofline(const recipe::RunConfig& config, const models::ModelConfig& model,
                    const train::MemoryEstimate& estimate, const train::RooflineDevice& device, bool measure_ops);

}  // namespace farthing::cli

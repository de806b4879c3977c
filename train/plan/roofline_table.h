// roofline_table.h — `farthing plan RECIPE --roofline DEVICE`: the recipe's optimizer step on
// paper at a GPU's datasheet rates (train/plan/roofline.h), printed as a table; with
// --measure-ops, each row's time measured on this machine's device beside it (roofline_measure.h).
// Relies on: train/plan/{roofline,memory_estimate}.h. Tested by: tests/train/plan/test_roofline.cpp
// (the arithmetic); the table by running it.
#pragma once

#include "train/recipe/run_config.h"
#include "train/plan/memory_estimate.h"
#include "train/plan/roofline.h"
#include "models/common/model_config.h"

namespace farthing::train {

void print_roofline(const recipe::RunConfig& config, const models::ModelConfig& model,
                    const train::MemoryEstimate& estimate, const train::RooflineDevice& device, bool measure_ops);

}  // namespace farthing::train

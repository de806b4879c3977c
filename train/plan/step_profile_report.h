// step_profile_report.h — a run's step profile (train/loop/step_profile.h) as a table and as
// profile.json, each op kind beside its roofline.
//
// The roofline (roofline.h) of the run's own step gives each kind's FLOPs and bytes; the
// measured time turns them into the rate the op reached (TFLOP/s for GEMMs and attention, GB/s
// for the rest), and, on a GPU whose datasheet the roofline knows, into the time the kind would
// take at that GPU's rates. Figures are per steady step (every step after the first).
// Relies on: train/loop/step_profile.h, roofline.h, memory_estimate.h. Tested by:
// tests/train/loop/test_step_profile.cpp (the table and the file from a real run).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "models/common/model_config.h"
#include "train/loop/step_profile.h"
#include "train/loop/trainer.h"
#include "train/plan/roofline.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

struct StepProfileContext {
  std::string device;                        // where the run trained ("cpu", "strict", "cuda:0 (NVIDIA H200)")
  const RooflineDevice* roofline = nullptr;  // that device's datasheet rates, when the roofline knows it
  RooflineStep step;                         // the run's step on paper
};

// The recipe's step on paper (the optimizer's bytes from the plan's estimate at this world
// size), and the roofline device a GPU model name names (H100, H200, RTX 4090; else null).
StepProfileContext step_profile_context(const recipe::RunConfig& config, const models::ModelConfig& model,
                                        int world_size, const std::string& device, const std::string& gpu_model);

std::string step_profile_table(const RunStepProfile& profile, const StepProfileContext& context);
nlohmann::json step_profile_json(const RunStepProfile& profile, const StepProfileContext& context);

// After a run with train.profile: ops, on rank 0: the table on stdout and profile.json in the run
// directory; returns the file's path (empty when the run was not profiled or this is not rank 0).
std::filesystem::path report_step_profile(const Trainer& trainer, int rank);

}  // namespace farthing::train

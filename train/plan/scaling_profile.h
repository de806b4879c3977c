// scaling_profile.h — the file `farthing bench dist --out` writes and `farthing plan --profile /
// --interconnect` reads: the links a run measured (latency and bandwidth of each collective) and
// its compute per ZeRO stage (step_timeline.h's StepCompute: seconds per turn of one pass, the
// optimizer's, the rest), with the shape it was measured at.
// Relies on: scaling_model.h, nlohmann/json. Tested by: tests/train/plan/test_scaling_model.cpp.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "train/plan/scaling_model.h"

namespace farthing::train {

struct ScalingProfile {
  std::string preset;
  int64_t seq = 0, batch = 0;
  int threads = 0;     // OpenMP threads per rank
  int world_size = 1;  // where it was measured
  int64_t param_count = 0;  // of the measured model: a profile only times the model it measured
  Interconnect links;  // measured; meaningless at world size 1
  std::vector<int> stages;            // ZeRO stage of each compute below
  std::vector<StepCompute> compute;   // the slowest rank's, per stage
  const StepCompute& compute_at(int stage) const;  // throws naming the file's stages
};

void write_scaling_profile(const std::filesystem::path& path, const ScalingProfile& profile);
// Throws naming the file and the missing or malformed key.
ScalingProfile read_scaling_profile(const std::filesystem::path& path);

}  // namespace farthing::train

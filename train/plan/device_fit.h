// device_fit.h — the settings of a recipe that fit a device's memory and run fastest on paper:
// `farthing plan RECIPE --fit DEVICE`, and model.loss_chunk_rows: 0 (auto) at `farthing train`.
//
// The global batch stays the recipe's (micro_batch x grad_accum sequences per rank); what may
// change is how it is cut (micro_batch, and grad_accum with it), whether blocks are recomputed
// in backward, and how many logits rows the head and loss take at once. Each candidate's peak is
// the plan's estimate (memory_estimate.h), its speed the roofline's step at the device's
// datasheet rates (roofline.h), so the choice is "fastest on paper among those whose predicted
// peak fits the budget": a lower bound on time, an upper bound on speed, the same for every
// candidate.
// Relies on: memory_estimate.h, roofline.h. Tested by: tests/train/plan/test_device_fit.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/device.h"
#include "framework/dist/communicator.h"
#include "models/common/model_config.h"
#include "train/plan/roofline.h"
#include "train/recipe/run_config.h"

namespace farthing::train {

// A GPU's memory as CUDA reports its total, and its datasheet rates.
struct FitDevice {
  const char* name;
  int64_t memory_bytes;
  const RooflineDevice* rates;
};
// h100, h200, rtx4090 (kRooflineDeviceNames); nullptr for another name.
const FitDevice* fit_device(const std::string& name);
// The share of a device's memory a plan may fill: the rest is the CUDA context, cuBLAS and cuDNN
// plans, and the allocator's slack (farthing init plans the same 90%).
inline constexpr double kDeviceMemoryShare = 0.9;

struct FitCandidate {
  int64_t micro_batch = 1, grad_accum = 1, loss_chunk_rows = 1;
  models::Checkpointing checkpointing = models::Checkpointing::kNone;
  int64_t peak_bytes = 0;
  bool fits = false;
  double tokens_per_s = 0.0;  // at the roofline (as built), over all ranks
};

struct FitResult {
  int64_t budget_bytes = 0;
  std::vector<FitCandidate> tried;
  std::optional<size_t> chosen;  // into tried; none when nothing fits
};

// Every cut of the recipe's per-rank batch (micro_batch a power of two dividing it), with and
// without recomputation, with the loss over the whole micro-batch or in power-of-two chunks down
// to 64 rows; chosen: the fastest on paper that fits budget_bytes, where speeds within 1% count
// as equal (the roofline cannot tell compute-bound GEMMs of different sizes apart): then the
// largest micro-batch, the largest loss chunk, the smaller peak.
FitResult fit_to_device(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                        int64_t budget_bytes, const RooflineDevice& rates);

// The result as a table: for each micro-batch and recomputation, the fastest chunk that fits (or
// the smallest peak when none does); then the choice, and why, beside the recipe as written.
std::string fit_table(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                      const FitDevice& device, const FitResult& result);

// The recipe with a candidate's settings.
recipe::RunConfig with_candidate(const recipe::RunConfig& config, const FitCandidate& candidate);

// model.loss_chunk_rows for a recipe that leaves it 0 (auto): the whole micro-batch when the plan's
// peak with it fits budget_bytes, else the largest power of two down to 64 that does (64 when
// none does: the plan then says the run does not fit).
int64_t fit_loss_chunk_rows(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                            int64_t budget_bytes);

// TrainerOutput::auto_loss_chunk_rows for farthing train and eval: fit_loss_chunk_rows against this
// rank's device's budget, the smallest choice over the ranks (so every rank runs the same
// shapes), announced on rank 0's stderr.
std::function<int64_t(const recipe::RunConfig&, const models::ModelConfig&)> auto_loss_chunk_rows(Communicator& comm);

// What a run on `device` may plan to hold: kDeviceMemoryShare of a CUDA device's free memory,
// kHostMemoryShare of this machine's MemAvailable for the CPU and the strict device (farthing
// init plans the same shares).
inline constexpr double kHostMemoryShare = 0.8;
// /proc/meminfo's MemAvailable in bytes; 0 where it cannot be read.
double host_memory_available_bytes();
int64_t training_memory_budget(Device device);

}  // namespace farthing::train

// train_checkpoint.h — a training run's complete state in one HDF5 checkpoint (format:
// docs/checkpoint_format.md), written collectively by all ranks and read back at any world size.
//
// Datasets, all under logical names with global shapes (padding stripped):
//   model/<HF name>                     bf16 working weights, HF shape
//   optim/<range>/master                f32 master (master f32), shape (numel)
//   optim/<range>/master_remainder      uint16 remainders as bytes (master remainder16), (2·numel)
//   optim/<range>/exp_avg, exp_avg_sq   f32, or bf16 bits; 8-bit/4-bit: .codes (u8) and .absmax (f32)
// <range> is an optimizer range name (a tensor, or tensors packed back to back joined by '+').
// Root attributes: step, optimizer_steps, data_position (sequences drawn), tokens_seen,
// skipped_steps, loss_scale, loss_scale_clean_steps, seed; strings: recipe (resolved YAML),
// model_config (HF config.json). Nothing records the writer's world size: the file is the same
// whatever it was.
// Each rank writes the slices of its ZeRO-owned ranges, so a save at np=2 resumes at 1 or 3:
// the reader takes exactly the slices its own layout owns, and 8-bit blocks move whole.
// Relies on: ckpt/h5_checkpoint_{writer,reader}, dist/zero_layout, optim/adamw.
// Tested by: tests/train/test_trainer.cpp, tests/cli/ (resume, crash, reshard).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/zero_layout.h"
#include "framework/optim/adamw.h"
#include "models/common/flat_layout.h"

namespace farthing::train {

// The bf16 weight at a global flat offset this rank owns (the weights may be stored whole, or
// only the owned shards, compactly, at ZeRO-3); a run of owned elements is contiguous.
using WeightLocator = std::function<uint16_t*(int64_t global_offset)>;

struct TrainProgressState {
  int64_t step = 0;             // optimizer steps taken (including skipped ones)
  int64_t data_position = 0;    // training sequences drawn so far (EpochSampler's k)
  int64_t tokens_seen = 0;
  int64_t skipped_steps = 0;
  double loss_scale = 1.0;
  int64_t loss_scale_clean_steps = 0;
  uint64_t seed = 0;
};

// What a checkpoint's state belongs to (compared on load; a mismatch names the field).
struct CheckpointIdentity {
  std::string recipe_yaml;
  std::string model_config_json;
};

// Collective. Each rank writes the owned ranges of the weights.
std::filesystem::path save_train_checkpoint(const std::filesystem::path& checkpoint_dir, MpiCommunicator& comm,
                                            const models::FlatLayout& layout, const dist::ZeroLayout& zero,
                                            const WeightLocator& weights, optim::AdamW& optimizer,
                                            const TrainProgressState& progress, const CheckpointIdentity& identity,
                                            const CheckpointCommitOptions& commit);

// Verifies the file (checksums, completion mark), checks that it holds this model, then reads
// this rank's owned ranges of the weights (the caller gathers the rest when it keeps them
// whole) and its optimizer state. Throws naming the file and the dataset or field that does not fit.
TrainProgressState load_train_checkpoint(const std::filesystem::path& path, MpiCommunicator& comm,
                                         const models::FlatLayout& layout, const dist::ZeroLayout& zero,
                                         const WeightLocator& weights, optim::AdamW& optimizer,
                                         const std::string& model_config_json);

}  // namespace farthing::train

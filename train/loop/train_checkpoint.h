// train_checkpoint.h — a training run's complete state in one HDF5 checkpoint (format:
// docs/checkpoint_format.md), written collectively by all ranks and read back at any world size.
//
// Datasets, all under logical names with global shapes (padding stripped):
//   model/<HF name>                     bf16 working weights, HF shape
//   optim/<range>/master                f32 master (master f32), shape (numel)
//   optim/<range>/master_remainder      uint16 remainders as bytes (master remainder16), (2·numel)
//   optim/<range>/exp_avg, exp_avg_sq   f32, or bf16 bits; 8-bit/4-bit: .codes (u8) and .absmax (f32)
//   fp8/amax_history                    f32 (tensors, length): FP8 delayed scaling's amax history,
//                                       the same on every rank (rank 0 writes it; every rank reads it)
//   gemm_plan_book                      string: train.gemm_algorithm timed's shared GEMM choices
//                                       (framework/backend/gemm_plan_book_text.h), rank 0's, the
//                                       same on every rank; absent under heuristic
// <range> is an optimizer range name (a tensor, or tensors packed back to back joined by '+').
// Root attributes: step, optimizer_steps, data_position (sequences drawn), tokens_seen,
// skipped_steps, loss_scale, loss_scale_clean_steps, seed; strings: recipe (resolved YAML),
// model_config (HF config.json). Where any range's moments are 8-bit, the optim group's
// attributes name the dynamic map that coded them (dynamic_map_8bit, e.g.
// "bitsandbytes-dynamic-torch1.13") and hold its 256 values (dynamic_map_8bit_signed for exp_avg,
// dynamic_map_8bit_unsigned for exp_avg_sq); a checkpoint without them predates them and was coded
// with the torch 1.13 map, the only one farthing has used. Nothing records the writer's world size: the file is the same
// whatever it was.
// Each rank writes the slices of its ZeRO-owned ranges, so a save at np=2 resumes at 1 or 3:
// the reader takes exactly the slices its own layout owns, and 8-bit blocks move whole.
// Relies on: ckpt/h5_checkpoint_{writer,reader}, dist/param_store, optim/adamw.
// Tested by: tests/train/loop/test_train_resume.sh, test_train_crash.sh, test_train_mpi.sh (resume,
// crash safety, resharded resume), tests/ckpt/test_bad_files.cpp; the GEMM plan book by
// tests/train/loop/test_gemm_plan_checkpoint.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "framework/backend/fp8_policy.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/param_store.h"
#include "framework/optim/adamw.h"
#include "kernels/numerics/gemm_plan_book.h"
#include "models/common/flat_layout.h"

namespace farthing::train {

// The optim group's attributes that name and hold the 8-bit state's dynamic map.
inline constexpr const char* kOptimGroup = "optim";
inline constexpr const char* kDynamicMapAttribute = "dynamic_map_8bit";
inline constexpr const char* kDynamicMapSignedAttribute = "dynamic_map_8bit_signed";
inline constexpr const char* kDynamicMapUnsignedAttribute = "dynamic_map_8bit_unsigned";

struct TrainProgressState {
  int64_t step = 0;             // optimizer steps taken (including skipped ones)
  int64_t data_position = 0;    // training sequences drawn so far (EpochSampler's k)
  int64_t tokens_seen = 0;
  int64_t skipped_steps = 0;
  double loss_scale = 1.0;
  int64_t loss_scale_clean_steps = 0;
  uint64_t seed = 0;
  std::string packing = "stream";  // data.packing as resolved (a checkpoint without it predates packing: stream)
};

// Everything a checkpoint saves and restores: the bf16 weights (the parameter store's owned
// ranges; its ZeRO layout says which), the optimizer's state, and the loop's progress.
struct TrainState {
  const models::FlatLayout& layout;
  dist::ParamStore& store;
  optim::AdamW& optimizer;
  TrainProgressState& progress;
  // FP8 delayed scaling's history, or null. Loading a checkpoint without one (a run that had no
  // delayed scaling) leaves it empty: scales start at 1, as in a new run.
  Fp8AmaxHistory* fp8_history = nullptr;
  // train.gemm_algorithm timed: the GEMM plan book every rank runs, or null. Saved when it holds
  // a book; a load sets it to the checkpoint's book, or to none where the checkpoint has none.
  std::optional<kernels::GemmPlanBook>* gemm_plan_book = nullptr;
};

// What a checkpoint's state belongs to (compared on load; a mismatch names the field).
struct CheckpointIdentity {
  std::string recipe_yaml;
  std::string model_config_json;
};

// The GEMM plan book as the dataset kGemmPlanBookDataset (collective: the same book on every rank),
// and back: none where the checkpoint has no such dataset; text that is not a book fails naming
// the file and the line.
inline constexpr const char* kGemmPlanBookDataset = "gemm_plan_book";
void write_gemm_plan_book(H5CheckpointWriter& writer, const kernels::GemmPlanBook& book);
std::optional<kernels::GemmPlanBook> read_gemm_plan_book(const H5CheckpointReader& reader);

// Collective. Each rank writes the owned ranges of the weights and its optimizer state.
std::filesystem::path save_train_checkpoint(const std::filesystem::path& checkpoint_dir, MpiCommunicator& comm,
                                            const TrainState& state, const CheckpointIdentity& identity,
                                            const CheckpointCommitOptions& commit);

// Collective. Verifies the file (checksums, completion mark), checks that it holds this model,
// then reads this rank's owned ranges of the weights, its optimizer state and the progress, and
// has the store publish the weights (stages 1-2 gather the rest). Throws naming the file and the
// dataset or field that does not fit.
void load_train_checkpoint(const std::filesystem::path& path, MpiCommunicator& comm, TrainState& state,
                           const std::string& model_config_json);

}  // namespace farthing::train

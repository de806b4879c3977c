// trainer.h — the training loop: a recipe's RunConfig in, a fine-tuned model and a run
// directory out (ARCHITECTURE.md §2 and §5). One process is world size 1 of the same code.
//
// Per optimizer step, on every rank:
//   1. draw this rank's grad_accum micro-batches from the global batch (world · grad_accum ·
//      micro_batch sequences; rank r takes micro-batches r·grad_accum ...; data position k);
//   2. count the global batch's loss targets (one integer all-reduce) so every micro-batch's
//      gradient is that of the global mean (× the fp16 loss scale), whatever the split;
//   3. forward + backward per micro-batch; with grad_accum > 1 each micro-batch's gradient is
//      computed alone and added in order, ((g0 + g1) + g2)..., the same association as the
//      ranks' fixed-order reduction — so np=1 with 2 micro-batches equals np=2 with 1, bit for bit;
//   4. ZeRO: reduce the fp32 gradients (stage 1 all-reduce, stage 2 reduce-scatter to owners);
//   5. global grad norm and non-finite count (one reduction): skip the step on inf/NaN (fp16
//      loss scaler backs off) or fail, per the recipe; else one fused AdamW pass over each
//      rank's shards (clip and unscale folded in), bf16 weights cast RN or SR;
//   6. all-gather the new shards; the model computes with the bf16 weights (widened exactly to
//      its fp32 buffer), or with the fp32 master under precision fp32 + master f32.
// Evaluation, metrics.jsonl, the progress line and checkpoints (train_checkpoint.h) around it.
// Resume restores everything that determines the future, so N straight steps equal K steps +
// save + resume to N bit for bit, at any world size that keeps the global batch.
// ZeRO-3 and the optimizer step fused into backward run the model over a UnitStorage
// (zero_unit_storage.h): no whole parameter or gradient buffer exists; each rank keeps its owned
// bf16 weights (and master, moments, gradient sums) and units are gathered when used.
// Relies on: models/, framework/{optim,data,ckpt,dist,recipe}. Tested by: tests/train/, tests/cli/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/memory.h"
#include "framework/data/dataset.h"
#include "framework/data/sampler.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/zero_collectives.h"
#include "framework/dist/zero_layout.h"
#include "framework/optim/adamw.h"
#include "framework/optim/loss_scaler.h"
#include "framework/optim/lr_schedule.h"
#include "framework/recipe/run_config.h"
#include "framework/train/metrics_log.h"
#include "framework/train/model_source.h"
#include "framework/train/progress.h"
#include "framework/train/train_checkpoint.h"
#include "framework/train/zero_unit_storage.h"
#include "models/common/transformer.h"

namespace farthing::train {

struct EvalResult {
  double loss = 0.0;       // mean over counted targets
  int64_t tokens = 0;      // counted targets
  int64_t batches = 0;
};

struct TrainResult {
  int64_t final_step = 0;
  double last_loss = 0.0;
  std::optional<EvalResult> eval_before, eval_after;
  std::filesystem::path last_checkpoint;
  double seconds = 0.0;
};

// What the trainer prints: rank 0 only, and tests can silence it.
struct TrainerOutput {
  bool progress = true;
};

class Trainer {
 public:
  // Opens the model, tokenizer and data, builds the model, optimizer and ZeRO layout. Nothing
  // is written to the run directory yet.
  Trainer(recipe::RunConfig config, MpiCommunicator& comm, TrainerOutput output = {});
  ~Trainer();

  // Trains to train.steps. resume: "" (a fresh run; refuses a run_dir that already holds
  // checkpoints), "latest", or a checkpoint path. stop_at > 0 ends the run after that step
  // with a checkpoint, as a job's time limit would (the schedule still spans train.steps).
  TrainResult train(const std::string& resume = "", int64_t stop_at = 0);
  // One optimizer step (steps 1-6 of the header), no logging or saving: train()'s inner loop,
  // public for `farthing bench dist`.
  struct StepOutcome {
    double loss = 0.0;
    double grad_norm = 0.0;
    bool skipped = false;
    int64_t tokens = 0;
  };
  StepOutcome train_step();
  // Bytes this rank sent in ZeRO's gradient and weight collectives so far.
  int64_t bytes_communicated() const {
    return storage_ ? storage_->bytes_sent() : collectives_->bytes_communicated();
  }

  // Mean loss over the eval set (max_batches micro-batches, 0: all), split over ranks.
  EvalResult evaluate(int64_t max_batches);
  // Loads a training checkpoint's weights and optimizer state (eval and generate use it).
  void load_checkpoint(const std::filesystem::path& path);
  // "latest" or a path, resolved against this run's checkpoint directory.
  std::filesystem::path resolve_checkpoint(const std::string& which) const;

  const recipe::RunConfig& config() const { return config_; }
  models::Transformer& model() { return *model_; }
  const data::Tokenizer* tokenizer() const { return source_.tokenizer.get(); }
  const data::SplitData& data() const { return data_; }
  const optim::AdamW& optimizer() const { return *optimizer_; }
  const TrainProgressState& progress() const { return progress_; }
  std::filesystem::path checkpoint_dir() const;
  // Optimizer ranges that could not take 8-bit state (off a block boundary).
  int64_t demoted_ranges() const { return demoted_; }

 private:
  void fill_micro_batch(int64_t first_draw, std::vector<int32_t>& tokens, std::vector<int32_t>& targets);
  const float* add_micro_batch_grads(int64_t micro_batch);
  void on_unit_grads(int unit, const float* grads);
  double scaler_options_and_schedule();
  int unit_index(int64_t global_offset) const;  // the ZeRO unit holding a global element
  uint16_t* weight_at(int64_t global_offset) const;  // WeightLocator over weights_
  float* owned_grads(size_t shard) const;           // unit mode: shard's part of grad_sum_
  void sync_model_params();  // after the weights (or master) changed: the model's fp32 view
  std::filesystem::path save(bool final_save);
  void log_eval(const EvalResult& r, const char* when);

  recipe::RunConfig config_;
  MpiCommunicator& comm_;
  TrainerOutput output_;
  ModelSource source_;
  data::SplitData data_;
  std::unique_ptr<data::EpochSampler> sampler_;
  std::unique_ptr<models::Transformer> model_;
  std::unique_ptr<dist::ZeroLayout> zero_;
  std::unique_ptr<dist::ZeroCollectives> collectives_;
  std::unique_ptr<optim::AdamW> optimizer_;
  optim::LrSchedule schedule_;
  std::unique_ptr<optim::LossScaler> scaler_;
  // bf16 working weights (kWeights): the whole flat space, or in unit mode (ZeRO-3,
  // optimizer-in-backward) only this rank's owned parts, compactly in shard order.
  Buffer weights_;
  // fp32 gradient sums (kGrads): the whole flat space when grad_accum > 1; in unit mode (not
  // fused) the owned parts, summed over micro-batches as the storage delivers them.
  Buffer grad_sum_;
  bool unit_mode_ = false;
  std::unique_ptr<ZeroUnitStorage> storage_;
  std::vector<int> shard_of_unit_;         // optimizer shard of each unit's owned part, or -1
  std::vector<int64_t> compact_offset_;    // per shard: where it starts in the compact buffers
  int64_t micro_batch_ = 0;                // the micro-batch being computed (unit mode)
  double fused_grad_norm_sq_ = 0.0;        // optimizer-in-backward: sum of the units' squared norms
  std::string recipe_yaml_, model_config_json_;
  bool params_from_master_ = false;  // precision fp32 with an fp32 master
  int64_t demoted_ = 0;
  TrainProgressState progress_;
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<ProgressLine> progress_line_;
};

}  // namespace farthing::train

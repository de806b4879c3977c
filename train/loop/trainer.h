// trainer.h — the training loop: a recipe's RunConfig in, a fine-tuned model and a run
// directory out (docs/design.md §2 and §5). One process is world size 1 of the same code.
//
// Per optimizer step, on every rank:
//   1. draw this rank's grad_accum micro-batches from the global batch (world · grad_accum ·
//      micro_batch sequences; rank r takes micro-batches r·grad_accum ...; data position k);
//   2. count the global batch's loss targets (one integer all-reduce) so every micro-batch's
//      gradient is that of the global mean (× the fp16 loss scale), whatever the split;
//   3. forward + backward per micro-batch over the parameter store (dist/param_store.h): each
//      unit's weights are widened (or gathered, at ZeRO-3) when used, and its gradients summed
//      over ranks as backward finishes it (all-reduce at stage 1, reduce-scatter to the owners
//      at 2-3) and kept, added in micro-batch order ((g0 + g1) + g2)..., the same association as
//      the ranks' fixed-order reduction — so np=1 with 2 micro-batches equals np=2 with 1, bit
//      for bit; with the optimizer step fused into backward each unit steps right there instead;
//   4. global grad norm and non-finite count (one reduction): skip the step on inf/NaN (fp16
//      loss scaler backs off) or fail, per the recipe; else one fused AdamW pass over each
//      rank's shards (clip and unscale folded in), bf16 weights cast RN or SR;
//   5. the store publishes the new shards (an all-gather at stages 1-2; ZeRO-3 gathers on use).
// The bf16 weights are the only copy of the weights: no whole fp32 parameter or gradient buffer
// exists at any stage (the master, when kept, is sharded like the moments).
// Evaluation, metrics.jsonl, the progress line and checkpoints (train_checkpoint.h) around it.
// Resume restores everything that determines the future, so N straight steps equal K steps +
// save + resume to N bit for bit, at any world size that keeps the global batch.
// Relies on: models/, framework/{optim,data,ckpt,dist,recipe}. Tested by: tests/train/loop/, tests/cli/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/profiling_backend.h"
#include "framework/core/memory.h"
#include "framework/data/dataset.h"
#include "framework/data/sampler.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/param_store.h"
#include "framework/dist/zero_layout.h"
#include "framework/optim/adamw.h"
#include "framework/optim/loss_scaler.h"
#include "framework/optim/lr_schedule.h"
#include "train/recipe/run_config.h"
#include "train/loop/metrics_log.h"
#include "train/loop/model_source.h"
#include "train/loop/progress.h"
#include "train/loop/step_profile.h"
#include "train/loop/step_timeline.h"
#include "train/loop/train_checkpoint.h"
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
  // SIGTERM or SIGUSR1 when a signal stopped the run early (stop_signals.h): the run saved
  // last_checkpoint after final_step and the process should exit with kExitPreempted. 0 otherwise.
  int stopped_by_signal = 0;
};

// What the trainer prints: rank 0 only, and tests can silence it.
struct TrainerOutput {
  bool progress = true;
  // When set, each train_step records where its time went here (step_timeline.h): `farthing
  // bench dist` and the scaling model read it. Must outlive the trainer.
  StepTimeline* timeline = nullptr;
  // Sizes model.loss_chunk_rows 0 (auto) for the recipe and its model: the plan's choice for this
  // device (train/plan/device_fit.h), which the loop cannot call itself. Needed only for auto.
  std::function<int64_t(const recipe::RunConfig&, const models::ModelConfig&)> auto_loss_chunk_rows = nullptr;
};

class Trainer {
 public:
  // Opens the model, tokenizer and data, builds the model, optimizer and ZeRO layout. Nothing
  // is written to the run directory yet.
  Trainer(recipe::RunConfig config, MpiCommunicator& comm, TrainerOutput output = {});
  ~Trainer();

  // Trains to train.steps. resume: "" (a fresh run; refuses a run_dir that already holds
  // checkpoints), "latest", a checkpoint path, or "auto" (latest if there is one, else fresh). stop_at > 0 ends the run after that step
  // with a checkpoint, as a job's time limit would (the schedule still spans train.steps).
  // While it trains, rank 0 holds run_dir's lock (run_dir_lock.h: a second writer is refused),
  // and SIGTERM/SIGUSR1 on any rank ends the run after the current step with a checkpoint
  // (stop_signals.h; the result says so).
  TrainResult train(const std::string& resume = "", int64_t stop_at = 0);
  // One optimizer step (steps 1-6 of the header), no logging or saving: train()'s inner loop,
  // public for `farthing bench dist`.
  struct StepOutcome {
    double loss = 0.0;
    double grad_norm = 0.0;
    bool skipped = false;
    int64_t tokens = 0;
    double unchanged_fraction = 0.0;  // bf16 weights the step left bit-identical (1 when skipped: all of them)
    std::optional<optim::GradHistogram> grad_histogram;  // only when set_grad_histogram(true)
  };
  StepOutcome train_step();
  // Diagnostic, off by default: each later step that inspects its gradients (not with the
  // optimizer step fused into backward) also returns their magnitude histogram over all ranks,
  // the loss scale divided out: one more pass over the gradients and one all-reduce.
  void set_grad_histogram(bool on) { grad_histogram_ = on; }
  // Bytes this rank sent in ZeRO's gradient and weight collectives so far.
  int64_t bytes_communicated() const { return store_->bytes_sent(); }
  // The ZeRO layout of this rank, and what its store does with it (for the scaling model).
  const dist::ZeroLayout& zero_layout() const { return *zero_; }
  const dist::ParamStoreOptions& store_options() const { return store_->options(); }
  DType kept_grad_dtype() const { return store_->grad_dtype(); }  // of the store's kept gradients

  // Mean loss over the eval set (max_batches micro-batches, 0: all), split over ranks.
  EvalResult evaluate(int64_t max_batches);
  // Loads a training checkpoint's weights and optimizer state (eval and generate use it).
  void load_checkpoint(const std::filesystem::path& path);
  // "latest" or a path, resolved against this run's checkpoint directory.
  std::filesystem::path resolve_checkpoint(const std::string& which) const;

  const recipe::RunConfig& config() const { return config_; }
  Device device() const { return device_; }  // train.device as resolved on this rank
  int world_size() const { return comm_.world_size(); }
  models::Transformer& model() { return *model_; }
  const models::Transformer& model() const { return *model_; }
  const data::Tokenizer* tokenizer() const { return source_.tokenizer.get(); }
  const data::SplitData& data() const { return data_; }
  const optim::AdamW& optimizer() const { return *optimizer_; }
  const TrainProgressState& progress() const { return progress_; }
  std::filesystem::path checkpoint_dir() const;
  // The memory tracker's peak (all tracked host memory) when the first weights had been set up,
  // before the model's activations were allocated.
  int64_t loading_peak_bytes() const { return loading_peak_bytes_; }
  // Optimizer ranges that could not take 8-bit state (off a block boundary).
  int64_t demoted_ranges() const { return demoted_; }
  // train.profile: ops: every op of the steps trained so far (step_profile.h); null when off.
  const RunStepProfile* step_profile() const { return profiling_backend_ ? &step_profile_ : nullptr; }

 private:
  // doc_start: each token's document start (data.packing documents / none), else left empty.
  void fill_micro_batch(int64_t first_draw, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                        std::vector<int32_t>& doc_start);
  void set_up_first_weights(const models::TransformerSpec& spec);
  TrainState train_state() {
    return TrainState{model_->layout(), *store_, *optimizer_, progress_, fp8_history_.get(), &gemm_plan_book_};
  }
  // After a step: under train.gemm_algorithm timed, the first time, every rank takes rank 0's GEMM
  // choices; then the plans' records not yet logged go to the log (and the step profile).
  void settle_gemm_plans();
  // A checkpoint's GEMM plan book (or none) against train.gemm_algorithm, saying what does not apply.
  void adopt_checkpoint_gemm_plans(const std::optional<kernels::GemmPlanBook>& saved,
                                   const std::filesystem::path& path);
  void step_unit(int unit, int shard, const Tensor& grads);  // the optimizer step fused into backward
  double scaler_options_and_schedule();
  void all_reduce_fp8_amaxes();
  std::filesystem::path save(bool final_save);
  void log_eval(const EvalResult& r, const char* when);

  recipe::RunConfig config_;
  MpiCommunicator& comm_;
  TrainerOutput output_;
  ModelSource source_;
  data::SplitData data_;
  std::unique_ptr<data::EpochSampler> sampler_;
  Device device_;  // train.device: where the store, the optimizer state and the activations live
  double device_peak_flops_ = 0.0;  // its datasheet dense bf16 peak (0: none), the denominator of MFU
  // train.profile: ops: device_'s backend, timed, and installed as backend_for(device_) for the
  // trainer's life (declared before everything that holds the backend, so it outlives them).
  std::unique_ptr<ProfilingBackend> profiling_backend_;
  std::optional<ProfilingBackend::Install> profiling_install_;
  dist::ProfilerCommObserver profiled_comm_observer_;
  std::unique_ptr<dist::TimedCommunicator> profiled_comm_;  // the ZeRO collectives' one, as communication spans
  RunStepProfile step_profile_;
  std::unique_ptr<Communicator> device_comm_;  // off the host: the ZeRO collectives, staged through comm_
  std::unique_ptr<dist::TimedCommunicator> timed_comm_;  // the ZeRO collectives' one, with TrainerOutput::timeline
  std::unique_ptr<dist::ZeroLayout> zero_;
  std::unique_ptr<dist::ParamStore> store_;  // weights, gradients and the units the model uses
  std::unique_ptr<TimedUnitStorage> timed_store_;  // store_ as the model sees it, with TrainerOutput::timeline
  Fp8Recipe fp8_recipe_;                          // train.precision fp8: the fp8 section, typed
  std::unique_ptr<Fp8AmaxHistory> fp8_history_;   // its delayed scaling's state, or null
  std::unique_ptr<models::Transformer> model_;
  std::unique_ptr<optim::AdamW> optimizer_;
  optim::LrSchedule schedule_;
  std::unique_ptr<optim::LossScaler> scaler_;
  // On device_: each micro-batch's loss sum, read once per step (the device keeps them meanwhile).
  Buffer micro_batch_loss_sums_;
  bool grad_histogram_ = false;  // set_grad_histogram
  std::string recipe_yaml_, model_config_json_;
  std::string build_note_;  // what setting up held, for the first progress note
  int64_t loading_peak_bytes_ = 0;
  int64_t demoted_ = 0;
  TrainProgressState progress_;
  // train.gemm_algorithm timed: the GEMM plan book every rank runs, once shared or resumed.
  std::optional<kernels::GemmPlanBook> gemm_plan_book_;
  size_t gemm_records_logged_ = 0;
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<ProgressLine> progress_line_;
};

}  // namespace farthing::train

// trainer.cpp — see trainer.h.
#include "train/loop/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/core/error.h"
#include "framework/dist/device_communicator.h"
#include "framework/dist/gemm_plan_exchange.h"
#include "framework/optim/grad_clip.h"
#include "train/recipe/recipe.h"
#include "train/loop/model_options.h"
#include "train/loop/optimizer_setup.h"
#include "train/loop/data_source.h"
#include "train/loop/gemm_plan_log.h"
#include "train/loop/run_dir_lock.h"
#include "train/loop/save_watchdog.h"
#include "train/loop/stop_signals.h"
#include "train/loop/train_device.h"
#include "models/common/presets.h"
#include "models/common/weights_from_file.h"

namespace farthing::train {

namespace fs = std::filesystem;

namespace {

// Token files need no tokenizer (the data loader tells them by their FTOK magic).
bool is_token_file(const recipe::DataSection& data) {
  if (data.format == recipe::DataFormat::kTokens) return true;
  if (data.format != recipe::DataFormat::kAuto || !fs::exists(data.train)) return false;
  return data::dataset_format(data.train, data::DataFormat::kAuto) == data::DataFormat::kTokens;
}

ModelSource open_source(const recipe::RunConfig& config) {
  check_data_files(config);  // before the model is read: a typo in a path fails at once
  return open_model_source(config.model, /*need_tokenizer=*/!is_token_file(config.data));
}

data::SplitData open_data(const recipe::RunConfig& config, const ModelSource& source) {
  const data::DatasetOptions options = dataset_options(config);
  FARTHING_CHECK(config.data.seq_len <= source.config.max_seq_len, "data.seq_len (", config.data.seq_len,
                 ") exceeds the model's max_position_embeddings (", source.config.max_seq_len, ")");
  return data::load_split_data(config.data.train, config.data.eval, options, source.tokenizer.get(),
                               source.config.vocab_size);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Writes text to path atomically (temporary name, then rename), naming the path on failure.
void write_text_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    FARTHING_CHECK(out.good(), "cannot write ", tmp.string(), " (directory not writable, or disk full?)");
  }
  fs::rename(tmp, path);
}

// The gradients' magnitude histogram over this rank's shards, summed over ranks. Off the host
// the shards come through a host buffer a piece at a time.
optim::GradHistogram gradient_histogram(std::span<const Tensor> grads, double loss_scale, Backend& backend,
                                        MpiCommunicator& comm) {
  optim::GradHistogram h;
  h.loss_scale = loss_scale;
  constexpr int64_t kPiece = int64_t(1) << 20;
  std::vector<std::byte> staged;
  for (const Tensor& g : grads) {
    FARTHING_CHECK(g.dtype() == DType::kF32 || g.dtype() == DType::kBF16, "gradient histogram: gradients must be f32 "
                   "or bf16, got ", g.describe());
    for (int64_t begin = 0; begin < g.numel(); begin += kPiece) {
      const int64_t n = std::min(kPiece, g.numel() - begin);
      Tensor piece = g.flat_slice(begin, n);
      const void* host = piece.data();
      if (!g.device().is_cpu()) {
        staged.resize(size_t(n) * dtype_size_bytes(g.dtype()));
        backend.copy(Tensor(staged.data(), g.dtype(), Shape{n}), piece);
        host = staged.data();
      }
      if (g.dtype() == DType::kF32) optim::add_grad_magnitudes(h, static_cast<const float*>(host), n);
      else optim::add_grad_magnitudes_bf16(h, static_cast<const uint16_t*>(host), n);
    }
  }
  std::vector<int64_t> sums = h.counts;
  sums.push_back(h.zeros);
  sums.push_back(h.nonfinite);
  comm.all_reduce(Tensor(sums.data(), DType::kI64, Shape{int64_t(sums.size())}), ReduceOp::kSum);
  std::copy(sums.begin(), sums.begin() + int64_t(h.counts.size()), h.counts.begin());
  h.zeros = sums[h.counts.size()];
  h.nonfinite = sums[h.counts.size() + 1];
  return h;
}

}  // namespace

Trainer::Trainer(recipe::RunConfig config, MpiCommunicator& comm, TrainerOutput output)
    : config_((recipe::validate_run_config(config), std::move(config))),
      comm_(comm),
      output_(output),
      source_(open_source(config_)),
      data_(open_data(config_, source_)) {
  if (config_.model.loss_chunk_rows == 0) {  // auto: sized by the plan, recorded in recipe.yaml
    FARTHING_CHECK(output_.auto_loss_chunk_rows != nullptr, "model.loss_chunk_rows is 0 (auto), which farthing train "
                   "sizes against the device's memory; give a number of rows when building a Trainer directly");
    config_.model.loss_chunk_rows = output_.auto_loss_chunk_rows(config_, source_.config);
  }
  const recipe::TrainSection& t = config_.train;
  sampler_ = std::make_unique<data::EpochSampler>(data_.train.size(), t.seed, config_.data.shuffle);
  const int64_t step_sequences = t.micro_batch * t.grad_accum * comm_.world_size();
  if (step_sequences > data_.train.size() && comm_.rank() == 0) {
    // Not an error (a tiny smoke run may want it), but a real run sized like this trains each
    // step on copies of the same few sequences.
    std::fprintf(stderr, "farthing: warning: one step takes %lld sequences (train.micro_batch %lld x train.grad_accum "
                         "%lld x %d rank(s)), more than the %lld the training split of %s holds at data.seq_len %lld: "
                         "each step repeats them; lower train.micro_batch, train.grad_accum or data.seq_len "
                         "(farthing data preview RECIPE shows the counts)\n",
                 (long long)step_sequences, (long long)t.micro_batch, (long long)t.grad_accum, comm_.world_size(),
                 (long long)data_.train.size(), data_.train.source().c_str(), (long long)config_.data.seq_len);
  }
  models::TransformerSpec spec = models::make_spec(source_.config);

  zero_ = std::make_unique<dist::ZeroLayout>(models::zero_units(spec.layout), comm_.world_size(), comm_.rank());
  FARTHING_CHECK(zero_->global_elems() == spec.layout.total_elems(), "the ZeRO layout spans ", zero_->global_elems(),
                 " elements but the model's flat layout ", spec.layout.total_elems());
  OptimizerSetup setup = make_optimizer_setup(spec.layout, config_.optimizer, t.seed);
  demoted_ = setup.demoted;
  if (config_.optimizer.master == optim::MasterMode::kNone &&
      config_.optimizer.weight_rounding == optim::WeightRounding::kNearest && comm_.rank() == 0) {
    // Pure bf16 training, as many trainers do it: allowed, but it loses updates (docs/numerics.md §2).
    std::fprintf(stderr, "farthing: note: optimizer.master 'none' with weight_rounding 'nearest': every update "
                         "smaller than half a bf16 spacing is lost, so many weights stick at fine-tuning learning "
                         "rates (farthing bench precision measures it); 'stochastic' keeps them on average\n");
  }
  device_ = resolve_train_device(t.device, comm_.local_rank());  // a CUDA rank takes its node-local GPU
  if (t.profile == recipe::StepProfileMode::kOps) {  // before anything takes the device's backend
    profiling_backend_ = std::make_unique<ProfilingBackend>(backend_for(device_));
    profiling_install_.emplace(*profiling_backend_);
  }
  device_peak_flops_ = backend_for(device_).dense_bf16_peak_flops();  // once: a device query, not per step
  check_fp4_device(config_, device_, backend_for(device_).cuda_compute_capability());
  const bool bf16_compute = t.precision != recipe::Precision::kFp32 && t.precision != recipe::Precision::kFp16;
  if (device_.kind == DeviceKind::kCuda && !bf16_compute && comm_.rank() == 0 && output_.progress) {
    // bf16 compute runs cuDNN's attention (the CUDA ops say which on the first call); fp32 and
    // fp16 run the hand-written fp32 kernel, checked against the CPU on one H200 but slow.
    std::fprintf(stderr, "farthing: note: on %s under train.precision %s attention runs farthing's fp32 kernel, the "
                         "slow path (about 1%% of the GPU's GEMM rate; bf16 runs cuDNN's: docs/results.md)\n",
                 device_.name().c_str(), std::string(recipe::enum_name(t.precision)).c_str());
  }
  Backend& backend = backend_for(device_);
  backend.nn().set_deterministic_attention(t.deterministic_attention);
  if (!t.deterministic_attention && device_.kind == DeviceKind::kCuda && comm_.rank() == 0 && output_.progress) {
    std::fprintf(stderr, "farthing: note: train.deterministic_attention false: cuDNN's attention backward may sum "
                         "in any order, so steps do not repeat bit for bit (resume is not exact, np=N differs from "
                         "np=1 in the last bits)\n");
  }
  // The plans' records (each timed once) are kept where they can be timed: on a GPU.
  backend.nn().set_gemm_planning(t.gemm_algorithm, /*log=*/device_.kind == DeviceKind::kCuda);
  if (t.gemm_algorithm == recipe::GemmAlgorithmChoice::kTimed && device_.kind != DeviceKind::kCuda &&
      comm_.rank() == 0 && output_.progress) {
    std::fprintf(stderr, "farthing: note: train.gemm_algorithm timed changes nothing on the %s device: its GEMMs have "
                         "no algorithms to choose from (the book it shares and saves is empty)\n",
                 device_.name().c_str());
  }
  // Off the host, the ZeRO collectives move device buffers: NCCL, or MPI through host staging.
  dist::DeviceCommunicator device_comm = dist::make_device_communicator(comm_, backend);
  device_comm_ = std::move(device_comm.comm);
  const std::string collectives = comm_.world_size() > 1 ? "; ZeRO collectives over " + device_comm.kind : "";
  Communicator* data_comm_ptr = device_comm_ ? device_comm_.get() : static_cast<Communicator*>(&comm_);
  if (output_.timeline != nullptr) {
    timed_comm_ = std::make_unique<dist::TimedCommunicator>(*data_comm_ptr, output_.timeline->comm_spans);
    data_comm_ptr = timed_comm_.get();
  }
  if (profiling_backend_) {
    profiled_comm_ = std::make_unique<dist::TimedCommunicator>(*data_comm_ptr, profiled_comm_observer_);
    data_comm_ptr = profiled_comm_.get();
  }
  Communicator& data_comm = *data_comm_ptr;
  const dist::ParamStoreOptions store_options = store_options_of(config_, setup.config.master_mode);
  const optim::OffloadOptions offload = offload_options_of(config_, store_options, comm_.world_size());
  optimizer_ = std::make_unique<optim::AdamW>(std::move(setup.config), zero_->owned_shards(), &backend, offload);
  if (output_.timeline != nullptr) {
    optimizer_->set_offload_observer(
        [timeline = output_.timeline](const optim::OffloadSpan& span) { timeline->offload_spans.push_back(span); });
  }
  if (comm_.world_size() > 1) {  // one rank's sums are already global (and may then stay on the device)
    optimizer_->set_reduce_hook([this](std::span<double> values) {
      comm_.all_reduce(Tensor(values.data(), DType::kF64, Shape{int64_t(values.size())}), ReduceOp::kSum);
    });
  }
  store_ = std::make_unique<dist::ParamStore>(*zero_, data_comm, backend, store_options);
  store_->set_master_source([this](size_t shard) { return optimizer_->master(shard); });
  store_->set_unit_grads_hook([this](int unit, int shard, const Tensor& grads) { step_unit(unit, shard, grads); });
  set_up_first_weights(spec);  // before the model allocates its activations: loading peaks lower
  loading_peak_bytes_ = memory_tracker(device_).snapshot().total_peak_bytes;
  if (uses_fp8(config_)) {
    fp8_recipe_ = fp8_recipe_of(config_);
    if (fp8_recipe_.scaling == Fp8Scaling::kTensorDelayed) {
      fp8_history_ = std::make_unique<Fp8AmaxHistory>(models::Fp8Linears::history_tensors(spec, fp8_recipe_),
                                                      fp8_recipe_.amax_history_len);
    }
  }
  models::ModelOptions options = model_options_of(config_, &fp8_recipe_, fp8_history_.get());
  options.unit_storage = store_.get();
  if (output_.timeline != nullptr) {
    timed_store_ = std::make_unique<TimedUnitStorage>(*store_, *output_.timeline);
    options.unit_storage = timed_store_.get();
  }
  options.ops = &backend.nn();
  model_ = std::make_unique<models::Transformer>(std::move(spec), t.micro_batch, config_.data.seq_len, options);
  micro_batch_loss_sums_ = Buffer(device_, size_t(t.grad_accum) * sizeof(double), MemoryCategory::kActivations);

  // From here on every rank issues the same collectives: a wait past the limit means a peer died or hung.
  comm_.set_collective_timeout(config_.distributed.collective_timeout_s);
  if (device_comm_) device_comm_->set_collective_timeout(config_.distributed.collective_timeout_s);
  comm_.set_reduce_order(config_.distributed.reduce);
  if (device_comm_) device_comm_->set_reduce_order(config_.distributed.reduce);
  recipe_yaml_ = recipe::resolved_recipe_yaml(config_);
  model_config_json_ = models::config_to_hf_json(source_.config);
  progress_.seed = t.seed;
  progress_.packing = std::string(recipe::enum_name(data_.packing));
  progress_.loss_scale = scaler_options_and_schedule();
  progress_line_ = std::make_unique<ProgressLine>(output_.progress && comm_.rank() == 0);
  build_note_ = "set up: loading the weights peaked at " + format_bytes(loading_peak_bytes_) + " (tracked), " +
                format_bytes(memory_tracker(device_).snapshot().total_current_bytes) + " held with the activations" +
                (device_.is_cpu() ? "" : " (on the " + device_.name() + " device)") + collectives;
}

// The first weights in fp32, a unit at a time: the store keeps them as bf16 (the parts this
// rank holds) and the master (when kept) starts as their exact values. A model.path file was
// opened lazily (ckpt::open_model_file): each unit's tensors are decoded from the mapped file
// into one unit-sized buffer, as a preset's random values are made per unit. At ZeRO-3 a rank
// reads only the units it owns a part of.
void Trainer::set_up_first_weights(const models::TransformerSpec& spec) {
  const recipe::TrainSection& t = config_.train;
  const models::FlatLayout& layout = spec.layout;
  if (source_.file) models::check_weights_in_file(*source_.file, layout);
  const auto& shards = optimizer_->shards();
  const bool keeps_master = optimizer_->config().master_mode != optim::MasterMode::kNone;
  for (size_t u = 0; u < zero_->units().size(); ++u) {
    const int64_t begin = zero_->units()[u].begin, span = zero_->aligned_end(u) - begin;
    if (config_.distributed.zero_stage == 3 && zero_->owned(u, comm_.rank()).empty()) continue;
    Buffer made(Device::cpu(), size_t(span) * sizeof(float), MemoryCategory::kOther);
    float* values = static_cast<float*>(made.data());
    if (source_.file) {
      models::copy_weights_range_from_file(*source_.file, layout, begin, begin + span, values);
    } else {
      models::Transformer::init_weights_range(spec, values, begin, begin + span, t.seed,
                                              float(config_.model.init_std));
    }
    Buffer on_device;  // the unit's values where the store and the master live
    if (!device_.is_cpu()) {
      on_device = Buffer(device_, made.bytes(), MemoryCategory::kOther);
      backend_for(device_).copy(on_device.view(DType::kF32, Shape{span}), made.view(DType::kF32, Shape{span}));
      made = Buffer();
      values = static_cast<float*>(on_device.data());
    }
    store_->set_initial_weights(begin, span, values);
    for (size_t s = 0; keeps_master && s < shards.size(); ++s) {
      const int64_t off = int64_t(shards[s].global_offset), n = int64_t(shards[s].numel);
      if (off < begin || off >= begin + span) continue;  // a shard lies inside one unit
      const Tensor shard_values(const_cast<float*>(values) + (off - begin), DType::kF32, Shape{n}, device_);
      // The store already holds the round-to-nearest cast; remainder16 needs the high half instead.
      const Tensor shard_weights = store_->weights(s);
      const bool rewrite = optimizer_->config().master_mode == optim::MasterMode::kRemainder16;
      optimizer_->init_master(s, shard_values, rewrite ? &shard_weights : nullptr);
    }
  }
  source_.file.reset();  // unmaps the file
  store_->publish_weights();  // the owners' weights as the master set them (remainder16: its high half)
}

// The lr schedule and the fp16 loss scaler from the recipe; returns the initial loss scale.
double Trainer::scaler_options_and_schedule() {
  schedule_.kind = config_.schedule.kind;
  schedule_.warmup_steps = config_.schedule.warmup_steps;
  schedule_.total_steps = config_.train.steps;
  schedule_.min_ratio = config_.schedule.min_ratio;
  optim::validate_lr_schedule(schedule_);
  optim::LossScalerOptions scaler;
  scaler.initial_scale = config_.loss_scale.initial;
  scaler.growth_factor = config_.loss_scale.growth_factor;
  scaler.backoff_factor = config_.loss_scale.backoff_factor;
  scaler.growth_interval = config_.loss_scale.growth_interval;
  scaler_ = std::make_unique<optim::LossScaler>(scaler, config_.train.precision == recipe::Precision::kFp16);
  return scaler_->scale();
}

// The optimizer step fused into backward: this unit's owned shard (if any) steps now. The recipe
// rules out clipping, accumulation and loss scaling, which would need every gradient first, so
// nothing here waits for the device: the norm and the non-finite count are summed beside the
// step and read at its end (train_step), where non-finite gradients fail the run.
void Trainer::step_unit(int /*unit*/, int shard, const Tensor& grads) {
  if (shard < 0) return;
  const OpPhaseScope phase(OpPhase::kOptimizer);
  const size_t ids[] = {size_t(shard)};
  const Tensor g[] = {grads}, w[] = {store_->weights(size_t(shard))};
  optimizer_->add_grad_sums(ids, g);
  optimizer_->step_shards(ids, w, g, optim::GradReport{}, optim::lr_multiplier(schedule_, progress_.step + 1));
}

Trainer::~Trainer() = default;

fs::path Trainer::checkpoint_dir() const { return fs::path(config_.checkpoint.run_dir) / "checkpoints"; }

fs::path Trainer::resolve_checkpoint(const std::string& which) const {
  if (which != "latest") {
    FARTHING_CHECK(fs::exists(which), "checkpoint '", which, "' does not exist");
    return which;
  }
  const std::optional<fs::path> latest = resolve_latest(checkpoint_dir());
  FARTHING_CHECK(latest.has_value(), "--resume latest: no checkpoint in ", checkpoint_dir().string(),
                 " (no 'latest' pointer); train without --resume first, or pass a checkpoint path");
  return *latest;
}

void Trainer::load_checkpoint(const fs::path& path) {
  TrainState state = train_state();
  load_train_checkpoint(path, comm_, state, model_config_json_);
  FARTHING_CHECK(progress_.seed == config_.train.seed, "checkpoint ", path.string(), " was trained with train.seed ",
                 progress_.seed, " but this recipe has ", config_.train.seed,
                 "; the seed keys the data order and stochastic rounding, so resuming needs the same seed");
  const std::string packing(recipe::enum_name(data_.packing));
  FARTHING_CHECK(progress_.packing == packing, "checkpoint ", path.string(), " was trained with data.packing ",
                 progress_.packing, " but this run packs its data as ", packing,
                 "; the packing decides what each sequence holds and so what the data position counts: resume with "
                 "data.packing: ", progress_.packing);
  scaler_->restore(progress_.loss_scale, progress_.loss_scale_clean_steps);
  const std::optional<kernels::GemmPlanBook> saved = std::move(gemm_plan_book_);
  gemm_plan_book_.reset();
  adopt_checkpoint_gemm_plans(saved, path);
}

void Trainer::adopt_checkpoint_gemm_plans(const std::optional<kernels::GemmPlanBook>& saved, const fs::path& path) {
  const bool say = comm_.rank() == 0 && output_.progress;
  if (config_.train.gemm_algorithm == recipe::GemmAlgorithmChoice::kHeuristic) {
    if (saved && say) {
      std::fprintf(stderr, "farthing: note: checkpoint %s holds timed GEMM choices, but train.gemm_algorithm is "
                           "heuristic: the heuristic's first algorithms run, so on a GPU this run need not repeat the bits "
                           "of the one that wrote it\n", path.c_str());
    }
    return;
  }
  if (!saved) {
    if (say) {
      std::fprintf(stderr, "farthing: note: checkpoint %s holds no GEMM choices (it was written under "
                           "train.gemm_algorithm heuristic, or before any step): they are timed again on the first "
                           "step\n", path.c_str());
    }
    return;
  }
  const std::string why = backend_for(device_).nn().adopt_gemm_plan_book(*saved);
  // Every rank must agree whether the book was taken (those without one share a new one after
  // the first step, a collective): a rank that could not take it makes every rank time again.
  int64_t refused = why.empty() ? 0 : 1;
  if (comm_.world_size() > 1) comm_.all_reduce(Tensor(&refused, DType::kI64, Shape{1}), ReduceOp::kMax);
  if (refused == 0) {
    gemm_plan_book_ = saved;
    return;
  }
  if (!why.empty() && comm_.rank() != 0) {
    std::fprintf(stderr, "farthing: note: rank %d: checkpoint %s's GEMM choices do not apply here (%s)\n",
                 comm_.rank(), path.c_str(), why.c_str());
  }
  if (say) {
    std::fprintf(stderr, "farthing: note: checkpoint %s's GEMM choices do not apply here (%s), so exact resume does "
                         "not hold: the GEMMs are timed again on the first step\n", path.c_str(),
                 why.empty() ? "on another rank" : why.c_str());
  }
}

void Trainer::settle_gemm_plans() {
  NnOps& ops = backend_for(device_).nn();
  if (config_.train.gemm_algorithm == recipe::GemmAlgorithmChoice::kTimed && !gemm_plan_book_) {
    // Rank 0's fastest for every rank: ranks that each ran their own would sum in other orders.
    const kernels::GemmPlanBook shared = dist::share_rank0_gemm_plan_book(comm_, ops.gemm_plan_book());
    const std::string why = ops.adopt_gemm_plan_book(shared);
    if (!why.empty()) {  // this rank is another GPU model or runs another cuBLASLt than rank 0
      kernels::GemmPlanBook heuristic = ops.gemm_plan_book();
      heuristic.choices.clear();
      const std::string again = ops.adopt_gemm_plan_book(heuristic);
      FARTHING_CHECK(again.empty(), "rank ", comm_.rank(), ": its own GEMM plan book does not apply: ", again);
      std::fprintf(stderr, "farthing: warning: rank %d: rank 0's GEMM choices do not apply here (%s): this rank runs "
                           "the heuristic's first algorithms, so ranks may differ in the last bits\n", comm_.rank(),
                   why.c_str());
    }
    gemm_plan_book_ = shared;
  }
  const std::vector<kernels::GemmPlanRecord> records = ops.gemm_plan_records();
  for (; gemm_records_logged_ < records.size(); ++gemm_records_logged_) {
    progress_line_->note(gemm_plan_record_line(records[gemm_records_logged_]));
  }
}

void Trainer::fill_micro_batch(int64_t first_draw, std::vector<int32_t>& tokens, std::vector<int32_t>& targets,
                               std::vector<int32_t>& doc_start) {
  const int64_t mb = config_.train.micro_batch, T = config_.data.seq_len;
  tokens.resize(size_t(mb * T));
  targets.resize(size_t(mb * T));
  doc_start.resize(data_.train.has_documents() ? size_t(mb * T) : 0);
  for (int64_t b = 0; b < mb; ++b) {
    data_.train.sequence(sampler_->at(first_draw + b), tokens.data() + b * T, targets.data() + b * T,
                         doc_start.empty() ? nullptr : doc_start.data() + b * T);
  }
}

Trainer::StepOutcome Trainer::train_step() {
  const recipe::TrainSection& t = config_.train;
  const int64_t A = t.grad_accum, mb = t.micro_batch, T = config_.data.seq_len;
  const int64_t W = comm_.world_size(), r = comm_.rank();
  StepTimeline* timeline = output_.timeline;
  if (profiling_backend_) profiling_backend_->profiler().begin_step();
  if (timeline) {
    timeline->clear();
    timeline->begin = StepTimeline::now();
  }
  auto mark = [timeline](double StepTimeline::*at) {
    if (timeline) timeline->*at = StepTimeline::now();
  };

  // This rank's micro-batches of the global batch, and the global count of loss targets.
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(A)), targets(static_cast<size_t>(A));
  std::vector<std::vector<int32_t>> doc_starts(static_cast<size_t>(A));
  int64_t counted = 0;
  for (int64_t a = 0; a < A; ++a) {
    fill_micro_batch(progress_.data_position + (r * A + a) * mb, tokens[size_t(a)], targets[size_t(a)],
                     doc_starts[size_t(a)]);
    for (int32_t y : targets[size_t(a)]) counted += y >= 0;
  }
  comm_.all_reduce(Tensor(&counted, DType::kI64, Shape{1}), ReduceOp::kSum);
  const double loss_scale = scaler_->scale();
  const float loss_grad_scale = counted > 0 ? float(loss_scale / double(counted)) : 0.0f;

  // Forward and backward of every micro-batch; each one's loss sum in global order, added in
  // that order on every rank. The store keeps (or, fused, steps) each unit's gradients as
  // backward finishes it.
  std::vector<double> loss_sums(size_t(W * A), 0.0);
  Backend& backend = backend_for(device_);
  backend.fill_bytes(micro_batch_loss_sums_.data(), 0, micro_batch_loss_sums_.bytes());
  auto* device_loss_sums = static_cast<double*>(micro_batch_loss_sums_.data());
  model_->set_fp4_step(uint32_t(progress_.step));  // keys this step's Hadamard signs and SR bits
  for (int64_t a = 0; a < A; ++a) {
    store_->begin_micro_batch(a);
    if (timeline) timeline->passes.push_back({.begin = StepTimeline::now(), .first_call = timeline->calls.size()});
    model_->set_document_starts(doc_starts[size_t(a)].empty() ? nullptr : doc_starts[size_t(a)].data());
    model_->forward_backward_sum(tokens[size_t(a)].data(), targets[size_t(a)].data(), loss_grad_scale,
                                 device_loss_sums + a);
    if (timeline) {
      timeline->passes.back().end = StepTimeline::now();
      timeline->passes.back().end_call = timeline->calls.size();
    }
  }
  backend.copy(Tensor(loss_sums.data() + r * A, DType::kF64, Shape{A}),  // this rank's, in place
               micro_batch_loss_sums_.view(DType::kF64, Shape{A}));
  comm_.all_reduce(Tensor(loss_sums.data(), DType::kF64, Shape{W * A}), ReduceOp::kSum);
  if (fp8_history_) {
    model_->collect_fp8_amaxes();  // the step's amaxes, gathered in the device's memory
    all_reduce_fp8_amaxes();
  }
  double loss_total = 0.0;
  for (double s : loss_sums) loss_total += s;
  StepOutcome out;
  out.loss = counted > 0 ? loss_total / double(counted) : 0.0;
  out.tokens = W * A * mb * T;

  const OpPhaseScope optimizer_phase(OpPhase::kOptimizer);
  if (t.optimizer_in_backward) {  // every unit stepped as backward finished it (step_unit)
    mark(&StepTimeline::optimizer_begin);
    const optim::StepDiagnostics d = optimizer_->finish_step();
    mark(&StepTimeline::optimizer_end);
    FARTHING_CHECK(d.nonfinite_grads == 0, "step ", progress_.step + 1, ": ", d.nonfinite_grads,
                   " gradient values are inf or NaN (loss ", out.loss, "); with the optimizer step fused into "
                   "backward every unit has already stepped on them, so the step cannot be skipped. Lower the "
                   "learning rate, or set train.optimizer_in_backward: false");
    out.grad_norm = d.grad_norm;
    out.unchanged_fraction = d.unchanged_fraction;
    store_->publish_weights();
  } else {
    mark(&StepTimeline::optimizer_begin);
    std::vector<Tensor> grad_views, weight_views;
    for (size_t s = 0; s < optimizer_->shards().size(); ++s) {
      grad_views.push_back(store_->grads(s));
      weight_views.push_back(store_->weights(s));
    }
    optim::GradOptions grad_options;
    grad_options.max_grad_norm = t.max_grad_norm;
    grad_options.loss_scale = loss_scale;
    const double lr_multiplier = optim::lr_multiplier(schedule_, progress_.step + 1);
    if (grad_histogram_) out.grad_histogram = gradient_histogram(grad_views, loss_scale, backend_for(device_), comm_);
    optim::StepDiagnostics d;
    if (optimizer_->can_clip_on_device()) {
      // The norm, the clip factor and the skip stay on the device: no host wait before the step.
      optimizer_->step_clipped_on_device(weight_views, grad_views, grad_options, lr_multiplier);
      d = optimizer_->finish_step();
    } else {  // the norm is reduced over ranks (or the step runs on the host) first
      const optim::GradReport report = optimizer_->inspect_grads(grad_views, grad_options);
      if (report.nonfinite == 0) d = optimizer_->step(weight_views, grad_views, report, lr_multiplier);
      d.grad_norm = report.grad_norm;
      d.nonfinite_grads = report.nonfinite;
    }
    out.grad_norm = d.grad_norm;
    if (d.nonfinite_grads > 0) {
      FARTHING_CHECK(t.nonfinite != recipe::Nonfinite::kFail, "step ", progress_.step + 1, ": ", d.nonfinite_grads,
                     " gradient values are inf or NaN (loss ", out.loss, "); train.nonfinite is 'fail'. Lower the "
                     "learning rate, or use precision bf16, or train.nonfinite: skip");
      out.skipped = true;
      out.unchanged_fraction = 1.0;  // a skipped step leaves every weight as it was
      ++progress_.skipped_steps;
      scaler_->update(true);
      if (fp8_history_) fp8_history_->discard_step();  // its amaxes may be inf or NaN
      mark(&StepTimeline::optimizer_end);
    } else {
      out.unchanged_fraction = d.unchanged_fraction;
      scaler_->update(false);
      mark(&StepTimeline::optimizer_end);
      store_->publish_weights();
    }
  }
  if (fp8_history_ && !out.skipped) fp8_history_->end_step();
  progress_.data_position += W * A * mb;
  progress_.tokens_seen += out.tokens;
  progress_.loss_scale = scaler_->scale();
  progress_.loss_scale_clean_steps = scaler_->clean_steps();
  ++progress_.step;
  mark(&StepTimeline::end);
  if (profiling_backend_) {
    step_profile_.add(profiling_backend_->profiler().end_step(), progress_.step);
    step_profile_.gemm_plans = backend.nn().gemm_plan_records();
  }
  return out;
}

// Delayed scaling's amaxes of this step, the max over every rank (as ordered bits, so the max
// is exact and NaN-dominant): every rank then keeps the same history, whatever the world size.
void Trainer::all_reduce_fp8_amaxes() {
  std::vector<uint32_t>& bits = fp8_history_->step_amax_bits();
  std::vector<int64_t> wide(bits.begin(), bits.end());
  comm_.all_reduce(Tensor(wide.data(), DType::kI64, Shape{int64_t(wide.size())}), ReduceOp::kMax);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = uint32_t(wide[i]);
}

EvalResult Trainer::evaluate(int64_t max_batches) {
  const int64_t mb = config_.train.micro_batch, T = config_.data.seq_len;
  const int64_t W = comm_.world_size(), r = comm_.rank();
  const int64_t n = data_.eval.size();
  int64_t batches = (n + mb - 1) / mb;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  std::vector<double> sums(size_t(batches), 0.0);
  std::vector<int64_t> counts(size_t(batches), 0);
  std::vector<int32_t> tokens(static_cast<size_t>(mb * T)), targets(static_cast<size_t>(mb * T));
  std::vector<int32_t> doc_start(data_.eval.has_documents() ? size_t(mb * T) : 0);
  int32_t* doc_start_of = doc_start.empty() ? nullptr : doc_start.data();
  // Batch e runs on rank e % W. At ZeRO-3 a forward pass gathers units (collectives), so every
  // rank runs the same number of passes: a rank out of batches runs one whose targets count for nothing.
  const int64_t rounds = (batches + W - 1) / W;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t e = round * W + r;
    if (e >= batches && config_.distributed.zero_stage < 3) break;
    for (int64_t b = 0; b < mb; ++b) {
      const int64_t index = e * mb + b;
      if (e < batches && index < n) {
        data_.eval.sequence(index, tokens.data() + b * T, targets.data() + b * T,
                            doc_start_of ? doc_start_of + b * T : nullptr);
      } else {  // a short last batch: padding rows count for nothing
        std::fill(tokens.begin() + b * T, tokens.begin() + (b + 1) * T, 0);
        std::fill(targets.begin() + b * T, targets.begin() + (b + 1) * T, -100);
        if (doc_start_of) std::fill(doc_start_of + b * T, doc_start_of + (b + 1) * T, 0);
      }
    }
    model_->set_document_starts(doc_start_of);
    const models::Transformer::LossSum ls = model_->forward_loss_sum(tokens.data(), targets.data());
    if (e >= batches) continue;  // the padding pass
    sums[size_t(e)] = ls.sum;
    counts[size_t(e)] = ls.counted;
  }
  if (batches > 0) {
    comm_.all_reduce(Tensor(sums.data(), DType::kF64, Shape{batches}), ReduceOp::kSum);
    comm_.all_reduce(Tensor(counts.data(), DType::kI64, Shape{batches}), ReduceOp::kSum);
  }
  EvalResult result;
  double total = 0.0;
  for (int64_t e = 0; e < batches; ++e) {
    total += sums[size_t(e)];
    result.tokens += counts[size_t(e)];
  }
  result.batches = batches;
  result.loss = result.tokens > 0 ? total / double(result.tokens) : 0.0;
  return result;
}

void Trainer::log_eval(const EvalResult& r, const char* when) {
  char text[160];
  std::snprintf(text, sizeof text, "eval %s step %lld: loss %.4f over %lld tokens (%lld batches)", when,
                (long long)progress_.step, r.loss, (long long)r.tokens, (long long)r.batches);
  progress_line_->note(text);
  metrics_->append({{"step", progress_.step}, {"eval_loss", r.loss}, {"eval_tokens", r.tokens}});
}

fs::path Trainer::save(bool final_save) {
  CheckpointCommitOptions commit;
  commit.update_latest = true;
  commit.keep_last = config_.checkpoint.keep_last;
  const SaveWatchdog watchdog(comm_, config_.checkpoint.save_timeout_s, progress_.step, checkpoint_dir());
  const fs::path path =
      save_train_checkpoint(checkpoint_dir(), comm_, train_state(), CheckpointIdentity{recipe_yaml_, model_config_json_},
                            commit);
  progress_line_->note(std::string(final_save ? "saved the final checkpoint " : "saved checkpoint ") + path.string());
  return path;
}

TrainResult Trainer::train(const std::string& resume, int64_t stop_at) {
  const auto t0 = std::chrono::steady_clock::now();
  const recipe::TrainSection& t = config_.train;
  const fs::path run_dir = config_.checkpoint.run_dir;
  if (comm_.rank() == 0) {
    std::error_code ec;
    fs::create_directories(checkpoint_dir(), ec);
    FARTHING_CHECK(!ec, "cannot create the run directory ", checkpoint_dir().string(), ": ", ec.message(),
                   "; set checkpoint.run_dir to a writable place");
  }
  // One writer per run directory: rank 0 holds the lock until train() returns. A refusal throws
  // on rank 0, which ends the job (abort_on_error.h) while the others wait here.
  std::unique_ptr<RunDirLock> lock;
  if (comm_.rank() == 0) lock = std::make_unique<RunDirLock>(run_dir);
  comm_.barrier();
  if (lock && !lock->stale_holder().empty()) {  // worth saying even with --quiet: that run crashed
    std::fprintf(stderr, "farthing: note: took over %s from a run that did not end cleanly (%s)\n",
                 lock->path().c_str(), lock->stale_holder().c_str());
  }
  StopSignals stop_signals;
  // "auto": continue the run_dir's latest checkpoint if it has one, else start (a requeued job).
  const std::string resume_from =
      resume == "auto" ? (resolve_latest(checkpoint_dir()).has_value() ? "latest" : "") : resume;
  if (resume_from.empty()) {
    const std::optional<fs::path> latest = resolve_latest(checkpoint_dir());
    FARTHING_CHECK(!latest.has_value(), "run_dir ", run_dir.string(), " already holds checkpoints (latest: ",
                   latest ? latest->string() : "", "); pass --resume latest to continue that run, or set "
                   "checkpoint.run_dir to a new directory (nothing was overwritten)");
  } else {
    load_checkpoint(resolve_checkpoint(resume_from));
  }
  if (comm_.rank() == 0) write_text_file(run_dir / "recipe.yaml", recipe_yaml_);
  progress_line_->note(build_note_);
  progress_line_->note(packing_note(config_, data_));
  metrics_ = std::make_unique<MetricsLog>(run_dir / "metrics.jsonl", resume_from.empty() ? -1 : progress_.step,
                                          comm_.rank() == 0, config_.metrics.tensorboard);

  TrainResult result;
  const int64_t eval_batches = t.eval_batches;
  if (progress_.step == 0 && data_.eval.size() > 0) {
    result.eval_before = evaluate(eval_batches);
    log_eval(*result.eval_before, "before training,");
  }
  const int64_t first_step = progress_.step;
  const int64_t last_step = stop_at > 0 ? std::min(stop_at, t.steps) : t.steps;
  const auto loop_start = std::chrono::steady_clock::now();
  while (progress_.step < last_step) {
    memory_tracker(device_).reset_peaks();
    const auto s0 = std::chrono::steady_clock::now();
    const StepOutcome out = train_step();
    const double step_seconds = seconds_since(s0);
    settle_gemm_plans();
    const double lr = config_.optimizer.lr * optim::lr_multiplier(schedule_, progress_.step);
    const int64_t peak = memory_tracker(device_).snapshot().total_peak_bytes;
    // Model FLOPs of this rank's micro-batches (6 N per token + attention), per second and as a
    // fraction of the device's datasheet bf16 peak where it has one (MFU).
    const double flops_per_s = model_->flops_per_step() * double(t.grad_accum) / step_seconds;
    const double device_peak = device_peak_flops_;
    nlohmann::json record = {{"step", progress_.step},          {"loss", out.loss},
                             {"lr", lr},                        {"grad_norm", out.grad_norm},
                             {"tokens", out.tokens},            {"tokens_seen", progress_.tokens_seen},
                             {"tokens_per_s", double(out.tokens) / step_seconds},
                             {"step_seconds", step_seconds},    {"peak_mem_bytes", peak},
                             {"skipped", out.skipped},          {"unchanged_fraction", out.unchanged_fraction}};
    record["model_flops_per_s"] = flops_per_s;
    if (device_peak > 0) record["mfu"] = flops_per_s / device_peak;
    if (scaler_->enabled()) record["loss_scale"] = scaler_->scale();
    if (uses_fp8(config_)) record["fp8_fallback_shapes"] = backend_for(device_).nn().fp8_fallback_shapes();
    metrics_->append(record);
    result.last_loss = out.loss;
    if (t.log_every > 0 && (progress_.step % t.log_every == 0 || progress_.step == t.steps)) {
      const double elapsed = seconds_since(loop_start);
      const int64_t done = progress_.step - first_step;
      ProgressUpdate u;
      u.step = progress_.step;
      u.total_steps = t.steps;
      u.loss = out.loss;
      u.lr = lr;
      u.grad_norm = out.grad_norm;
      u.tokens_per_s = double(out.tokens) / step_seconds;
      u.eta_seconds = elapsed / double(done) * double(t.steps - progress_.step);
      u.peak_mem_bytes = peak;
      u.mfu = device_peak > 0 ? flops_per_s / device_peak : 0.0;
      u.skipped = out.skipped;
      progress_line_->update(u);
    }
    if (t.eval_every > 0 && progress_.step % t.eval_every == 0 && progress_.step < t.steps && data_.eval.size() > 0) {
      log_eval(evaluate(eval_batches), "at");
    }
    if (config_.checkpoint.save_every > 0 && progress_.step % config_.checkpoint.save_every == 0 &&
        progress_.step < t.steps) {
      result.last_checkpoint = save(false);
    }
    // A stop signal on any rank stops every rank after this same step.
    StopSignals::raise_test_signal_after_step(progress_.step, comm_.rank());
    int64_t stop = stop_signals.received();
    if (comm_.world_size() > 1) comm_.all_reduce(Tensor(&stop, DType::kI64, Shape{1}), ReduceOp::kMax);
    if (stop != 0 && progress_.step < last_step) {
      result.stopped_by_signal = int(stop);
      progress_line_->note(signal_name(int(stop)) + ": stopping after step " + std::to_string(progress_.step) +
                           " with a checkpoint");
      break;
    }
  }
  if (data_.eval.size() > 0 && progress_.step == t.steps) {
    result.eval_after = evaluate(eval_batches);
    log_eval(*result.eval_after, "after training,");
  }
  // A run that stepped saves (at train.steps only if checkpoint.save_final); so does an explicit
  // --stop-at at a step with no checkpoint yet in this run_dir (resuming elsewhere at another
  // world size and saving re-shards a checkpoint).
  const bool saved_this_step = result.last_checkpoint == checkpoint_path_for_step(checkpoint_dir(), progress_.step);
  const bool finished = progress_.step == t.steps;
  if (!saved_this_step && ((progress_.step > first_step && (!finished || config_.checkpoint.save_final)) ||
                           (stop_at > 0 && !fs::exists(checkpoint_path_for_step(checkpoint_dir(), progress_.step))))) {
    result.last_checkpoint = save(progress_.step == t.steps);
  }
  result.final_step = progress_.step;
  result.seconds = seconds_since(t0);
  return result;
}

}  // namespace farthing::train

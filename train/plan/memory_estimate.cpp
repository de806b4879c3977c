// memory_estimate.cpp — see memory_estimate.h. Nothing here knows how a buffer is allocated:
// every figure comes from its owner (AdamW, ParamStore, Transformer), and this file only adds
// them up and takes the largest combination that the model's schedule holds at once.
// tests/train/plan/test_memory_estimate.cpp checks the result against the tracker after real training
// steps; tests/dist/test_param_store_plan.cpp checks the store's per-unit figures call by call.
#include "train/plan/memory_estimate.h"
#include "train/loop/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <utility>

#include "framework/backend/backend.h"
#include "framework/backend/cuda_ops_workspace.h"
#include "framework/core/error.h"
#include "framework/dist/param_store.h"
#include "framework/dist/zero_layout.h"
#include "train/loop/model_options.h"
#include "train/loop/optimizer_setup.h"
#include "models/common/presets.h"

namespace farthing::train {

namespace {

// Bytes by category at one moment of a step.
struct Held {
  std::array<int64_t, kNumMemoryCategories> bytes{};
  Held& add(MemoryCategory c, int64_t n) {
    bytes[size_t(c)] += n;
    return *this;
  }
  Held& add(const dist::UnitBytes& b) {
    add(MemoryCategory::kWeights, b.weights);
    add(MemoryCategory::kGrads, b.grads);
    return add(MemoryCategory::kCommBuffers, b.comm);
  }
  Held& add(const Held& h) {
    for (size_t c = 0; c < bytes.size(); ++c) bytes[c] += h.bytes[c];
    return *this;
  }
  Held& subtract(const dist::UnitBytes& b) {
    add(MemoryCategory::kWeights, -b.weights);
    add(MemoryCategory::kGrads, -b.grads);
    return add(MemoryCategory::kCommBuffers, -b.comm);
  }
  Held plus(const dist::UnitBytes& b) const { return Held(*this).add(b); }
  int64_t total() const {
    int64_t t = 0;
    for (int64_t b : bytes) t += b;
    return t;
  }
};

// Each category's peak over the moments considered, and the peak of their sum with the first
// moment that reaches it: what the tracker's per-category and total peaks will say.
struct StepPeaks {
  std::array<int64_t, kNumMemoryCategories> category{};
  int64_t total = -1;
  std::string moment;
  void consider(const Held& h, const std::string& when) {
    for (size_t c = 0; c < category.size(); ++c) category[c] = std::max(category[c], h.bytes[c]);
    if (h.total() > total) {
      total = h.total();
      moment = when;
    }
  }
};

// What one unit costs while a step uses it: the store's buffers (ParamStore::planned_unit_bytes),
// through the acquisition the model makes, with the model's own (Transformer::unit_buffer_bytes).
struct UnitCost {
  dist::UnitBytes gathering, acquiring, in_use, reducing, stepping;
  int64_t accumulator = 0;
  bool gathered = false;  // a gather brings it (else it is widened or read where it is)
};

UnitCost unit_cost(const dist::ZeroLayout& zero, const dist::ParamStoreOptions& store,
                   const models::TransformerSpec& spec, const models::ModelOptions& model, int64_t rows, size_t unit) {
  const models::UnitBufferBytes m = models::Transformer::unit_buffer_bytes(spec, int(unit), model, rows);
  const dist::ParamStoreUnitBytes s = dist::ParamStore::planned_unit_bytes(zero, store, unit, m.grad_adds);
  const dist::ParamStoreUnitBytes::Acquisition& acquisition = m.reads_bf16 ? s.bf16_params : s.params;
  UnitCost c;
  c.gathering = s.gathering;
  c.gathered = s.gathering.total() > 0;
  c.acquiring = acquisition.peak;
  c.in_use = acquisition.held;
  c.in_use.weights += m.weights;
  // The store's accumulator (none where in place) and the model's gradient scratch (the 1-D
  // tensors' sums, the embedding's rows per distinct token): both from the unit's first gradient
  // to its hand-over.
  c.accumulator = s.accumulator + m.grad_scratch;
  c.reducing = s.reducing;
  c.stepping = s.stepping;
  return c;
}

// One training step on top of `persistent`: the model's turns (Transformer::unit_schedule), each
// holding the embedding unit beside its own unit, the next turn's gather and the gradients being
// accumulated or reduced; then the trainer's reductions after backward. A turn's moments are
// taken in its order (acquiring, in use, prefetching, gradients, reduction), so that the first
// one to reach the peak names it. Reductions stay in flight beside later turns as the store's
// rule keeps them (ParamStore::grads_ready: the oldest finish once those in flight hold more
// than reduce_bucket_bytes; all of them at backward_done, after the last turn). hook_comm: what
// AdamW's reductions hold (each fused unit's step, or the optimizer step); loss_comm: the
// micro-batch loss sums' (trainer.cpp's train_step).
StepPeaks step_peaks(const Held& persistent, const models::UnitSchedule& schedule, const std::vector<UnitCost>& cost,
                     const std::vector<models::ParamUnit>& units, bool fused, int64_t reduce_bucket_bytes,
                     int64_t hook_comm, int64_t loss_comm) {
  using C = MemoryCategory;
  StepPeaks peaks;
  peaks.consider(persistent, "between steps");
  const int embedding = schedule.embedding;
  bool embedding_in_use = false, embedding_grads = false;
  std::deque<int> in_flight;  // units whose reductions are in flight, oldest first
  Held reducing;              // what they hold
  // Finishes the oldest reduction, `now` holding everything (it included).
  auto finish_oldest = [&](Held& now) {
    const UnitCost& o = cost[size_t(in_flight.front())];
    now.subtract(o.reducing);
    reducing.subtract(o.reducing);
    if (fused) {
      peaks.consider(now.plus(o.stepping).add(C::kCommBuffers, hook_comm),
                     "backward: stepping " + units[size_t(in_flight.front())].name);
    }
    in_flight.pop_front();
  };
  for (const models::UnitTurn& t : schedule.turns) {
    const UnitCost& c = cost[size_t(t.unit)];
    const std::string& name = units[size_t(t.unit)].name;
    const std::string phase = t.backward ? "backward: " : "forward: ";
    Held now = persistent;  // and the embedding's unit: in use, and its gradients from a tied head's loss on
    now.add(reducing);
    if (t.unit != embedding && embedding_in_use) now.add(cost[size_t(embedding)].in_use);
    if (embedding_grads) now.add(C::kGrads, cost[size_t(embedding)].accumulator);
    if (t.acquires) {
      if (!t.gathered_ahead && c.gathered) peaks.consider(now.plus(c.gathering), phase + "all-gathering " + name);
      peaks.consider(now.plus(c.acquiring), phase + (c.gathered ? "all-gathering " : "widening ") + name);
    }
    now.add(c.in_use);
    if (t.unit == embedding) embedding_in_use = true;
    peaks.consider(now, phase + name + " in use");
    if (t.prefetches >= 0) {
      now.add(cost[size_t(t.prefetches)].gathering);
      peaks.consider(now, phase + "prefetching " + units[size_t(t.prefetches)].name);
    }
    bool accumulating = t.unit == embedding && embedding_grads;
    if (t.loss_grads >= 0) {
      now.add(C::kGrads, cost[size_t(t.loss_grads)].accumulator);
      peaks.consider(now, "loss: " + units[size_t(t.loss_grads)].name + "'s gradients");
      embedding_grads = t.loss_grads == embedding;
      accumulating = t.loss_grads == t.unit;
    }
    if (!t.hands_over_grads) continue;
    if (!accumulating) {
      now.add(C::kGrads, c.accumulator);
      peaks.consider(now, "backward: " + name + "'s gradients");
    }
    now.add(C::kGrads, -c.accumulator);  // the reduction's figures hold it
    now.add(c.reducing);
    reducing.add(c.reducing);
    in_flight.push_back(t.unit);
    peaks.consider(now, "backward: reducing " + name + "'s gradients");
    while (!in_flight.empty() && reducing.total() > reduce_bucket_bytes) finish_oldest(now);
    if (t.unit == embedding) embedding_grads = false;
  }
  // backward_done: no unit in use; the reductions still in flight finish.
  Held done = Held(persistent).add(reducing);
  while (!in_flight.empty()) finish_oldest(done);
  peaks.consider(Held(persistent).add(C::kCommBuffers, loss_comm), "loss all-reduce");
  if (!fused) peaks.consider(Held(persistent).add(C::kCommBuffers, hook_comm), "optimizer step");
  return peaks;
}

// The recipe changes that shrink a category, for the budget message.
std::string shrink_advice(MemoryCategory c, const MemoryEstimate& e) {
  switch (c) {
    case MemoryCategory::kActivations:
      return "model.activation_checkpointing per_block, a smaller train.micro_batch (more train.grad_accum keeps "
             "the batch) or data.seq_len, fewer model.loss_chunk_rows";
    case MemoryCategory::kOptimizerState:
      return "optimizer.state 8bit or 4bit, optimizer.embedding_f32_state false, more ranks (--world-size)";
    case MemoryCategory::kMaster:
      return "optimizer.master remainder16 or none, more ranks (--world-size)";
    case MemoryCategory::kWeights:
    case MemoryCategory::kGrads:
      if (e.zero_stage == 3) {
        return std::string("more ranks (--world-size) shrink the owned shards; the units in use stay whole (the "
                           "embedding for the whole step, the largest block or head beside it), so a smaller "
                           "vocabulary or block only helps those") +
               (e.grad_sum > 0 ? "; train.optimizer_in_backward drops the kept gradients" : "");
      }
      return std::string("distributed.zero_stage 3 (weights sharded too, units gathered when used) or 2 (gradients "
                         "sharded), or train.optimizer_in_backward (no kept gradients)") +
             (e.grad_bytes_per_elem == 4 && e.world_size == 1
                  ? (e.grad_sums ? "; train.grad_accum 1 keeps them in bf16 (with train.grad_dtype auto or bf16)"
                                 : "; train.grad_dtype bf16 keeps them in bf16 (rounds one backward's gradient)")
                  : "");
    case MemoryCategory::kCommBuffers:
    case MemoryCategory::kOther:
      return "fewer ranks or ZeRO stage 1";
  }
  return "";
}

}  // namespace

MemoryEstimate estimate_memory(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                               int rank) {
  const recipe::TrainSection& t = config.train;
  FARTHING_CHECK(world_size >= 1, "world size ", world_size, " must be at least 1");
  FARTHING_CHECK(rank >= -1 && rank < world_size, "rank ", rank, " is not one of ", world_size);
  FARTHING_CHECK(config.data.seq_len <= model.max_seq_len, "data.seq_len (", config.data.seq_len,
                 ") exceeds the model's max_position_embeddings (", model.max_seq_len, ")");

  MemoryEstimate e;
  e.model = model;
  e.world_size = world_size;
  e.zero_stage = config.distributed.zero_stage;
  e.optimizer_in_backward = t.optimizer_in_backward;
  const models::TransformerSpec spec = models::make_spec(model);
  const models::FlatLayout& layout = spec.layout;
  e.param_count = layout.param_count();
  e.flat_elems = layout.total_elems();

  // Over the ParamStore the model allocates no whole parameter, gradient or GEMM-copy buffer.
  const Fp8Recipe fp8 = uses_fp8(config) ? fp8_recipe_of(config) : Fp8Recipe{};
  models::ModelOptions model_options = model_options_of(config, &fp8, nullptr);
  // The FP8 GEMM workspace is the device's: cuBLASLt's on CUDA (auto: where this machine has a GPU).
  const bool on_cuda = t.device == recipe::TrainDevice::kCuda ||
                       (t.device == recipe::TrainDevice::kAuto && visible_cuda_devices() > 0);
  model_options.fp8.planned_engine = on_cuda ? numerics::Fp8GemmEngine::kCublasLt : numerics::Fp8GemmEngine::kEmulated;
  model_options.fp4.planned_engine = on_cuda ? numerics::Fp4GemmEngine::kCublasLt : numerics::Fp4GemmEngine::kEmulated;
  e.model_buffers = models::Transformer::buffer_bytes(spec, t.micro_batch, config.data.seq_len, model_options);
  e.model_buffers.params = e.model_buffers.grads = e.model_buffers.working = 0;

  const OptimizerSetup setup = make_optimizer_setup(layout, config.optimizer, t.seed);
  const std::vector<dist::UnitRange> units = models::zero_units(layout);
  // The owners report what they hold for the run: AdamW (master, moments) and the parameter
  // store (bf16 weights, kept gradients, staging, the master's whole copy), for each rank.
  const dist::ParamStoreOptions store_options = store_options_of(config, setup.config.master_mode);  // the trainer's
  const optim::OffloadOptions offload = offload_options_of(config, store_options, world_size);
  e.offload = offload;
  dist::ParamStoreBytes store;
  // The rank that owns the most holds the most (master, moments, and at stages 2-3 the kept
  // gradients and at 3 the weights are owned shards).
  int64_t best_total = -1;
  for (int r = 0; r < world_size; ++r) {
    const dist::ZeroLayout zero(units, world_size, r);
    const std::vector<optim::ShardSpec> shards = zero.owned_shards();
    FARTHING_CHECK(!shards.empty(), "at world size ", world_size, " rank ", r, " owns no parameters (",
                   e.flat_elems, " elements in ", units.size(), " units of at least 256 per rank); "
                   "AdamW needs at least one shard per rank: use fewer ranks");
    const optim::AdamWStateBytes state = optim::AdamW::planned_bytes(setup.config, shards, offload);
    const dist::ParamStoreBytes held = dist::ParamStore::planned_bytes(zero, store_options);
    const int64_t total =
        (state.on_host ? 0 : state.master + state.state()) + state.step_sums + held.total();  // on the device
    if (rank >= 0 ? r != rank : total <= best_total) continue;
    best_total = total;
    e.peak_rank = r;
    e.optimizer = state;
    store = held;
    e.quantized_state_elems = 0;
    for (const optim::ShardSpec& s : shards) {
      for (const optim::ParamRange& range : setup.config.ranges) {
        const uint64_t begin = std::max(s.global_offset, range.global_offset);
        const uint64_t end = std::min(s.global_offset + s.numel, range.global_offset + range.numel);
        if (begin < end && optim::is_quantized(optim::effective_state_format(setup.config, range))) {
          e.quantized_state_elems += int64_t(end - begin);
        }
      }
    }
  }
  e.trainer_weights = store.weights;
  e.grad_sum = store.grads;
  e.comm_staging = store.staging;
  e.master_copy = store.master_copy;
  e.grad_bytes_per_elem =
      e.optimizer_in_backward ? 0 : int64_t(dtype_size_bytes(dist::kept_gradient_dtype(store_options, world_size)));
  const int64_t grad_bytes = int64_t(dtype_size_bytes(dist::kept_gradient_dtype(store_options, world_size)));
  e.grad_sums = t.grad_accum * world_size > 1;

  // Held for the whole run (AdamW's, the store's, the model's activations), then a step on top.
  using C = MemoryCategory;
  const TransformerBufferBytes& m = e.model_buffers;
  Held persistent;
  persistent.add(C::kMaster, e.held_bytes(C::kMaster)).add(C::kOptimizerState, e.held_bytes(C::kOptimizerState));
  persistent.add(C::kWeights, e.trainer_weights + e.master_copy).add(C::kGrads, e.grad_sum);
  // bf16 attention on CUDA runs through cuDNN, on bf16 copies carved from the ops' workspace of
  // the arrays the model keeps fp32 (none under bf16 activations); its backward takes the most. A
  // biased linear's bf16 bias operand (for a bf16 output) or its bias gradient (as cuBLASLt's
  // epilogue writes it) is carved there instead, when that is more (cuda_ops_workspace.h).
  if (on_cuda && model_options.compute == models::ComputeMode::kBF16) {
    const kernels::AttentionShape attention{t.micro_batch, config.data.seq_len, model.n_heads, model.n_kv_heads,
                                            model.head_dim(), kernels::GemmDtype::kBF16};
    const bool acts_bf16 = models::stored_act_dtype(model_options) == kernels::GemmDtype::kBF16;
    e.ops_workspace = int64_t(cudnn_attention_workspace_bytes(attention, true, {acts_bf16, acts_bf16, acts_bf16}, 0));
    const models::BlockOffsets& block = spec.blocks.front();
    const int64_t up_width = model.family == models::ModelFamily::kLlama ? 2 * model.hidden_dim : model.hidden_dim;
    int64_t biased_width = 0;  // the widest linear output with a bias
    if (block.qkv_b >= 0) biased_width = std::max(biased_width, model.qkv_dim());
    if (block.mlp_in_b >= 0) biased_width = std::max(biased_width, up_width);
    if (block.attn_out_b >= 0 || block.mlp_out_b >= 0) biased_width = std::max(biased_width, model.dim);
    e.ops_workspace = std::max(e.ops_workspace, int64_t(std::max(bf16_out_bias_operand_bytes(biased_width),
                                                                 bias_grad_scratch_bytes(biased_width))));
  }
  // The model's activations, the ops' workspace and the trainer's micro-batch loss sums (a double
  // each, on the device).
  const int64_t activations = m.activation_total() + e.ops_workspace + t.grad_accum * int64_t(sizeof(double));
  persistent.add(C::kCommBuffers, e.comm_staging).add(C::kActivations, activations);
  const int64_t persistent_bytes = persistent.total();
  const dist::ZeroLayout zero(units, world_size, e.peak_rank);
  std::vector<UnitCost> cost;
  for (size_t u = 0; u < units.size(); ++u) cost.push_back(unit_cost(zero, store_options, spec, model_options, t.micro_batch * config.data.seq_len, u));
  // The trainer's own all-reduces (MpiCommunicator's temporaries): AdamW's partial sums through
  // its reduce hook, in inspect_grads or finish_step; the micro-batch loss sums.
  const int64_t hook_comm =
      std::max(dist::mpi_all_reduce_temp_bytes(optim::AdamW::kInspectReducedValues, world_size, 8),
               dist::mpi_all_reduce_temp_bytes(optim::AdamW::kFinishReducedValues, world_size, 8));
  const int64_t loss_comm = dist::mpi_all_reduce_temp_bytes(world_size * t.grad_accum, world_size, 8);
  const int64_t bucket = world_size > 1 ? store_options.reduce_bucket_bytes : 0;  // as the store applies it
  const StepPeaks peaks = step_peaks(persistent, models::Transformer::unit_schedule(spec), cost, layout.units(),
                                     t.optimizer_in_backward, bucket, hook_comm, loss_comm);
  e.step_bytes = peaks.category;
  e.step_peak_bytes = peaks.total;
  e.step_peak_moment = peaks.moment;
  e.unit_weights = e.bytes(MemoryCategory::kWeights) - e.trainer_weights - e.master_copy;
  e.unit_grads = e.bytes(MemoryCategory::kGrads) - e.grad_sum;
  for (size_t u = 0; u < units.size(); ++u) {
    const models::UnitBufferBytes m =
        models::Transformer::unit_buffer_bytes(spec, int(u), model_options, t.micro_batch * config.data.seq_len);
    const dist::UnitStorage::GradAdds adds = m.grad_adds;
    const bool once = adds == dist::UnitStorage::GradAdds::kOnce;
    const int64_t span = zero.aligned_end(u) - units[u].begin;
    const models::ParamUnit& unit = layout.units()[u];
    const bool in_place = dist::grads_in_place(store_options, world_size, adds);
    if (spec.tok_emb >= unit.begin_elems && spec.tok_emb < unit.end_elems) {
      // Tied or with learned positions, the rows are set aside while it adds in place; else, untied,
      // summed per distinct token first.
      const bool tied = spec.head_w >= unit.begin_elems && spec.head_w < unit.end_elems;
      const bool set_aside = once && (tied || spec.pos_emb >= 0);
      e.embedding_rows_once = once && !set_aside;
      e.embedding_rows_set_aside = set_aside && in_place && t.grad_accum > 1;
    }
    // What is zeroed (ParamStore::acquire_grads, and the model where it overwrites): an
    // accumulator added to, whole; one overwritten, the padding past the unit's end and what the
    // model zeroes itself; the kept gradients in place, that at the step's first micro-batch.
    if (in_place) {
      e.grad_in_place_elems += span;
      e.grad_zeroed_once_elems += m.overwrite_zeroed_elems;
      continue;
    }
    e.grad_accumulator_elems += zero.padded_elems(u);
    e.grad_zeroed_elems += once ? zero.padded_elems(u) - unit.span_elems() + m.overwrite_zeroed_elems
                                : zero.padded_elems(u);
    if (!t.optimizer_in_backward) {
      e.grad_kept_from_accumulator_elems += e.zero_stage == 1 ? span : zero.owned(u, e.peak_rank).size();
    }
  }
  e.comm_transient = e.bytes(MemoryCategory::kCommBuffers) - e.comm_staging;

  // While the trainer is built (its constructor): the optimizer's and the store's buffers, and one
  // unit's fp32 first values at a time, decoded from the memory-mapped model.path
  // (ckpt::open_model_file: the mapping is the page cache's, not the tracker's) or made from a
  // preset; the model's activations come after. (A training checkpoint as model.path is read
  // whole: its fp32 tensors come on top, not predicted here.)
  e.from_file = !config.model.path.empty();
  int64_t largest_span = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    largest_span = std::max(largest_span, dist::ZeroLayout(units, 1, 0).aligned_end(u) - units[u].begin);
  }
  e.initial_weights = largest_span * 4;
  e.load_peak_bytes = persistent_bytes - activations + e.initial_weights;
  e.built_bytes = persistent_bytes;
  e.load_peak_moment = e.from_file ? "while loading model.path, one unit's fp32 values at a time"
                                   : "while setting up the first weights, one unit's fp32 values at a time";
  e.peak_bytes = std::max(e.step_peak_bytes, e.load_peak_bytes);
  if (e.optimizer.on_host) {
    const int64_t staging = e.optimizer.host_init_staging;
    const bool values_stay_on_host = !on_cuda && t.device != recipe::TrainDevice::kStrict;  // the trainer's device is the CPU
    e.host_load_peak_bytes =
        e.host_bytes() + (values_stay_on_host ? e.initial_weights + staging : std::max(e.initial_weights, staging));
  }

  e.nominal = optim::bytes_per_param(config.optimizer.state, config.optimizer.master,
                                     DType::kBF16, DType::kBF16);
  // §6's ZeRO rows: stage 1 divides the master and moments over the ranks, stage 2 the gradients
  // too, stage 3 the weights as well; a step fused into backward keeps no gradients. Kept
  // gradients are 2 B (bf16) for one backward, 4 B (fp32) when summed.
  e.nominal.grads = double(grad_bytes);
  e.nominal.master /= double(world_size);
  e.nominal.moments /= double(world_size);
  if (e.zero_stage >= 2) e.nominal.grads /= double(world_size);
  if (e.zero_stage == 3) e.nominal.weights /= double(world_size);
  if (e.optimizer_in_backward) e.nominal.grads = 0.0;
  if (e.optimizer.on_host) {  // the master and moments are the host's, not the device's
    e.nominal_host.master = std::exchange(e.nominal.master, 0.0);
    e.nominal_host.moments = std::exchange(e.nominal.moments, 0.0);
  }
  return e;
}

int64_t MemoryEstimate::held_bytes(MemoryCategory c) const {
  switch (c) {
    case MemoryCategory::kWeights: return trainer_weights + master_copy;
    case MemoryCategory::kGrads: return grad_sum;
    case MemoryCategory::kMaster: return optimizer.on_host ? 0 : optimizer.master;
    case MemoryCategory::kOptimizerState: return (optimizer.on_host ? 0 : optimizer.state()) + optimizer.step_sums;
    default: return 0;
  }
}

int64_t MemoryEstimate::host_bytes() const {
  return optimizer.on_host ? optimizer.master + optimizer.state() + optimizer.host_ring : 0;
}

int64_t MemoryEstimate::model_state_bytes() const {
  return held_bytes(MemoryCategory::kWeights) + held_bytes(MemoryCategory::kGrads) +
         held_bytes(MemoryCategory::kMaster) + held_bytes(MemoryCategory::kOptimizerState);
}

BudgetCheck check_budget(const MemoryEstimate& e, int64_t budget_bytes) {
  BudgetCheck check;
  check.fits = e.peak_bytes <= budget_bytes;
  if (check.fits) {
    check.message = "fits: predicted peak " + format_bytes(e.peak_bytes) + " per rank of a " +
                    format_bytes(budget_bytes) + " budget (" + format_bytes(budget_bytes - e.peak_bytes) + " to spare)";
    return check;
  }
  // Name the largest category, since that is where shrinking pays.
  int largest = 0;
  for (int c = 1; c < kNumMemoryCategories; ++c) {
    if (e.step_bytes[size_t(c)] > e.step_bytes[size_t(largest)]) largest = c;
  }
  const std::string when = e.load_peak_bytes > e.step_peak_bytes ? ", " + e.load_peak_moment : "";
  check.message = "over budget: predicted peak " + format_bytes(e.peak_bytes) + " per rank (rank " +
                  std::to_string(e.peak_rank) + " of " + std::to_string(e.world_size) + when + ") exceeds the " +
                  format_bytes(budget_bytes) + " budget by " + format_bytes(e.peak_bytes - budget_bytes) +
                  "; the largest part is " + std::string(memory_category_name(MemoryCategory(largest))) + " (" +
                  format_bytes(e.step_bytes[size_t(largest)]) + "). To shrink it: " +
                  shrink_advice(MemoryCategory(largest), e);
  if (e.load_peak_bytes > e.step_peak_bytes) {
    check.message += ". The peak itself comes before training, while the first weights are set up one unit at a time";
  }
  return check;
}


}  // namespace farthing::train

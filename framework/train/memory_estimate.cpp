// memory_estimate.cpp — see memory_estimate.h. Each function mirrors the constructor it names,
// allocation by allocation, and replay_training_step the training step in code order;
// tests/train/test_memory_estimate.cpp catches any drift by comparing with the tracker after
// real training steps.
#include "framework/train/memory_estimate.h"
#include "framework/train/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "framework/core/error.h"
#include "framework/dist/param_store.h"
#include "framework/dist/zero_layout.h"
#include "framework/train/optimizer_setup.h"
#include "models/common/presets.h"

namespace farthing::train {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The temporaries MpiCommunicator::all_reduce_async holds for n f32/f64 elements at world W:
// the zero-padded copy and the received blocks, ceil(n/W)·W elements each (mpi_communicator.cpp).
int64_t all_reduce_temp_bytes(int64_t n, int64_t world, int64_t elem_bytes) {
  if (n == 0 || world == 1) return 0;
  return 2 * ceil_div(n, world) * world * elem_bytes;
}

models::ModelOptions model_options_of(const recipe::RunConfig& config) {
  // The same mapping as trainer.cpp's model_options().
  models::ModelOptions o;
  const std::string& p = config.train.precision;
  o.compute = p == "fp32"   ? models::ComputeMode::kF32
              : p == "fp16" ? models::ComputeMode::kF16
                            : models::ComputeMode::kBF16;
  o.checkpointing = config.model.activation_checkpointing == "per_block" ? models::Checkpointing::kPerBlock
                                                                         : models::Checkpointing::kNone;
  o.loss_chunk_rows = config.model.loss_chunk_rows;
  return o;
}

std::vector<dist::UnitRange> unit_ranges(const models::FlatLayout& layout) {
  std::vector<dist::UnitRange> units;
  for (const models::ParamUnit& u : layout.units()) units.push_back({u.begin_elems, u.end_elems});
  return units;
}

// The MPI temporaries of ZeRO's gradient reduction and the trainer's own small all-reduces.
// Collectives run one at a time on the communicator's worker thread, and each frees its
// temporaries when it ends, so the largest one is what is held at once.
int64_t comm_transient_bytes(const dist::ZeroLayout& zero, int stage, int64_t grad_accum) {
  const int64_t world = zero.world_size();
  if (world == 1) return 0;
  int64_t largest = 0;
  for (size_t u = 0; u < zero.units().size(); ++u) {
    if (stage == 1) {  // all-reduce of the unit's aligned span, in place
      largest = std::max(largest, all_reduce_temp_bytes(zero.aligned_end(u) - zero.units()[u].begin, world, 4));
    } else {  // reduce-scatter of the padded unit: every rank's block of it arrives (P_u f32)
      largest = std::max(largest, zero.padded_elems(u) * 4);
    }
  }
  // trainer.cpp: the micro-batch loss sums (world · grad_accum f64); AdamW's reduce hook (≤ 4 f64).
  largest = std::max(largest, all_reduce_temp_bytes(world * grad_accum, world, 8));
  largest = std::max(largest, all_reduce_temp_bytes(4, world, 8));
  return largest;
}

// Replays tracked allocations in the order the code makes them, as the tracker counts them:
// each category's own peak, and the peak of their sum with the moment it happens.
class AllocationReplay {
 public:
  void hold(MemoryCategory c, int64_t bytes, const std::string& moment) {
    current_[size_t(c)] += bytes;
    peak_[size_t(c)] = std::max(peak_[size_t(c)], current_[size_t(c)]);
    total_ += bytes;
    if (total_ > total_peak_) {
      total_peak_ = total_;
      peak_moment_ = moment;
    }
  }
  void drop(MemoryCategory c, int64_t bytes) {
    current_[size_t(c)] -= bytes;
    total_ -= bytes;
  }
  // An allocation freed at once (a collective's temporaries).
  void touch(MemoryCategory c, int64_t bytes, const std::string& moment) {
    hold(c, bytes, moment);
    drop(c, bytes);
  }
  const std::array<int64_t, kNumMemoryCategories>& peaks() const { return peak_; }
  int64_t total_peak() const { return total_peak_; }
  const std::string& peak_moment() const { return peak_moment_; }

 private:
  std::array<int64_t, kNumMemoryCategories> current_{}, peak_{};
  int64_t total_ = 0, total_peak_ = 0;
  std::string peak_moment_;
};

// The unit holding a global offset: models::Transformer::unit_of.
size_t unit_of(const models::FlatLayout& layout, int64_t offset) {
  const auto& units = layout.units();
  const auto after = std::upper_bound(units.begin(), units.end(), offset,
                                      [](int64_t o, const models::ParamUnit& u) { return o < u.begin_elems; });
  return size_t(after - units.begin()) - 1;
}

// One training step on top of what `replay` already holds (the persistent buffers), in code
// order. The model over the ParamStore (transformer.cpp, dist/param_store.cpp):
//   at ZeRO-3 over several ranks, a gather (started by prefetch_params right after the previous
//     unit's acquire, or by acquire_unit itself): the send slot (L_u owned elements, zero-padded,
//     bf16 or the fp32 master) and the receive buffer (P_u fp32 parameters for the master, else
//     P_u bf16); acquire_unit then widens the bf16 into fp32 parameters (P_u), and the receive
//     buffer goes with the send slot;
//   where the whole unit is local (stages 1-2, or one rank): acquire_unit widens or copies it
//     straight into its fp32 parameters (P_u): no send slot, receive buffer or prefetch;
//   then at bf16/fp16 compute the unit's 16-bit GEMM copy (its span);
//   G() on a unit's first gradient: a zero-filled fp32 accumulator (P_u);
//   unit_grads_done over several ranks: at stage 1 the all-reduce of the unit's span in place
//     (MpiCommunicator's temporaries); at stages 2-3 the owned block (L_u f32) and
//     reduce_scatter's received blocks (P_u f32), and the accumulator goes before the step;
//     fused, a bf16 copy of the owned gradients where they are kept in bf16, and AdamW's two
//     small all-reduces.
// Order: the embedding is acquired first and kept to the end (a tied head reads it last, so
// then its gradients live from the loss to the end); blocks one at a time forward; the head
// from the final norm until its norm's backward; blocks again in reverse with their gradients;
// the embedding's gradients last. Evaluation runs the same forward without gradients: lower.
void replay_training_step(AllocationReplay& replay, const models::TransformerSpec& spec,
                           const dist::ZeroLayout& zero, const recipe::RunConfig& config, bool gather_f32) {
  using C = MemoryCategory;
  const models::FlatLayout& layout = spec.layout;
  const auto& units = layout.units();
  const bool narrow = config.train.precision != "fp32";
  const bool bf16_direct = config.train.precision == "bf16";  // the GEMMs read the bf16 weights themselves
  const bool fused = config.train.optimizer_in_backward;
  const int64_t world = zero.world_size();
  const int stage = config.distributed.zero_stage;
  const bool solo = world == 1;
  const bool local = solo || stage < 3;  // whole units on this rank: no gathers
  const bool bf16_grads =
      dist::kept_gradient_dtype({.grad_accum = config.train.grad_accum}, int(world)) == DType::kBF16;
  const int64_t send_elem_bytes = gather_f32 ? 4 : 2;
  std::vector<char> has_grads(units.size(), 0);

  // A gather (ParamStore::start_gather): the send slot, and the receive buffer — the fp32
  // parameters themselves when the master is gathered, else bf16 to widen on acquire.
  std::vector<char> in_flight(units.size(), 0);
  auto start_gather = [&](size_t u, const std::string& at) {
    if (local) return;
    replay.hold(C::kCommBuffers, zero.shard_elems(u) * send_elem_bytes, at);
    if (gather_f32) replay.hold(C::kWeights, zero.padded_elems(u) * 4, at);
    else replay.hold(C::kCommBuffers, zero.padded_elems(u) * 2, at);
    in_flight[u] = 1;
  };
  auto prefetch = [&](size_t u, const std::string& phase) {
    if (!in_flight[u]) start_gather(u, phase + ": prefetching " + units[u].name);
  };
  auto acquire = [&](size_t u, const std::string& phase) {
    const int64_t shard = zero.shard_elems(u), padded = zero.padded_elems(u);
    const std::string at = phase + ": all-gathering " + units[u].name;
    if (!in_flight[u]) start_gather(u, at);
    in_flight[u] = 0;
    if (bf16_direct) {  // the store's bf16 weights (or the gathered ones, kept until release) + the 1-D tensors in fp32
      if (!local) replay.drop(C::kCommBuffers, shard * send_elem_bytes);
      replay.hold(C::kWeights, models::unit_vector_elems(layout, int(u)) * 4, phase + ": " + units[u].name + " in use");
      return;
    }
    if (local) {
      replay.hold(C::kWeights, padded * 4, phase + ": widening " + units[u].name);
    } else if (!gather_f32) {  // widened into the fp32 parameters, then the receive buffer goes
      replay.hold(C::kWeights, padded * 4, at);
      replay.drop(C::kCommBuffers, padded * 2);
    }
    if (!local) replay.drop(C::kCommBuffers, shard * send_elem_bytes);
    if (narrow) replay.hold(C::kWeights, units[u].span_elems() * 2, phase + ": " + units[u].name + " in use");
  };
  auto release = [&](size_t u) {
    if (bf16_direct) {
      replay.drop(C::kWeights, models::unit_vector_elems(layout, int(u)) * 4);
      if (!local) replay.drop(C::kCommBuffers, zero.padded_elems(u) * 2);
      return;
    }
    if (narrow) replay.drop(C::kWeights, units[u].span_elems() * 2);
    replay.drop(C::kWeights, zero.padded_elems(u) * 4);
  };
  auto grads = [&](size_t u, const std::string& phase) {
    if (has_grads[u]) return;
    has_grads[u] = 1;
    replay.hold(C::kGrads, zero.padded_elems(u) * 4, phase + ": " + units[u].name + "'s gradients");
  };
  auto fused_step = [&](size_t u, const std::string& at) {  // ParamStore's hook: the trainer's step_unit
    const int64_t owned = zero.owned(u, zero.rank()).size();
    if (bf16_grads && owned > 0) replay.hold(C::kGrads, owned * 2, at);
    replay.touch(C::kCommBuffers, all_reduce_temp_bytes(2, world, 8), at);  // inspect_shard_grads
    replay.touch(C::kCommBuffers, all_reduce_temp_bytes(4, world, 8), at);  // step_shards
    return bf16_grads ? owned * 2 : 0;
  };
  auto grads_done = [&](size_t u) {
    if (!has_grads[u]) return;
    has_grads[u] = 0;
    const int64_t shard = zero.shard_elems(u), padded = zero.padded_elems(u);
    const int64_t span = zero.aligned_end(u) - zero.units()[u].begin;
    const std::string at = "backward: reducing " + units[u].name + "'s gradients";
    if (solo || stage == 1) {  // summed in place (or nothing to sum); the step reads the accumulator
      if (!solo) replay.touch(C::kCommBuffers, all_reduce_temp_bytes(span, world, 4), at);
      const int64_t narrowed = fused ? fused_step(u, at) : 0;
      replay.drop(C::kGrads, padded * 4);
      replay.drop(C::kGrads, narrowed);
      return;
    }
    replay.hold(C::kCommBuffers, shard * 4, at);
    replay.touch(C::kCommBuffers, padded * 4, at);
    replay.drop(C::kGrads, padded * 4);
    if (fused) replay.drop(C::kGrads, fused_step(u, at));
    replay.drop(C::kCommBuffers, shard * 4);
  };

  const size_t embedding = unit_of(layout, spec.tok_emb);
  const size_t head = unit_of(layout, spec.final_norm_w);
  const size_t head_weight = unit_of(layout, spec.head_w);  // the embedding when tied
  const int64_t L = spec.config.n_layers;
  // forward_trunk: each unit acquired, then the next one's gather started (prefetch).
  auto block = [&](int64_t l) { return unit_of(layout, spec.blocks[size_t(l)].qkv_w); };
  acquire(embedding, "forward");
  prefetch(L > 0 ? block(0) : head, "forward");
  for (int64_t l = 0; l < L; ++l) {
    const size_t b = block(l);
    acquire(b, "forward");
    prefetch(l + 1 < L ? block(l + 1) : head, "forward");
    release(b);
  }
  acquire(head, "forward");
  if (L > 0) prefetch(block(L - 1), "forward");  // for backward
  // loss_and_head, then backward_from_head
  grads(head_weight, "loss");
  grads(head, "backward");
  grads_done(head);
  release(head);
  for (int64_t l = L - 1; l >= 0; --l) {
    const size_t b = block(l);
    acquire(b, "backward");
    if (l > 0) prefetch(block(l - 1), "backward");
    grads(b, "backward");
    grads_done(b);
    release(b);
  }
  grads(embedding, "backward");
  grads_done(embedding);
  release(embedding);
  // train_step after backward: the micro-batch loss sums; unfused, AdamW's two reductions.
  replay.touch(C::kCommBuffers, all_reduce_temp_bytes(world * config.train.grad_accum, world, 8), "loss all-reduce");
  if (!fused) {
    replay.touch(C::kCommBuffers, all_reduce_temp_bytes(2, world, 8), "optimizer step");
    replay.touch(C::kCommBuffers, all_reduce_temp_bytes(4, world, 8), "optimizer step");
  }
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
             (e.grad_bytes_per_elem == 4 && e.world_size == 1 ? "; train.grad_accum 1 keeps them in bf16" : "");
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
  e.model_buffers = models::Transformer::buffer_bytes(spec, t.micro_batch, config.data.seq_len, model_options_of(config));
  e.model_buffers.params = e.model_buffers.grads = e.model_buffers.working = 0;

  const OptimizerSetup setup = make_optimizer_setup(layout, config.optimizer, t.seed);
  const std::vector<dist::UnitRange> units = unit_ranges(layout);
  // The owners report what they hold for the run: AdamW (master, moments) and the parameter
  // store (bf16 weights, kept gradients, staging, the master's whole copy), for each rank.
  const bool compute_from_master = t.precision == "fp32" && setup.config.master_mode == optim::MasterMode::kF32;
  dist::ParamStoreOptions store_options;  // as the trainer's constructor sets them
  store_options.zero_stage = e.zero_stage;
  store_options.grad_accum = t.grad_accum;
  store_options.optimizer_in_backward = t.optimizer_in_backward;
  store_options.compute_from_master = compute_from_master;
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
    const optim::AdamWStateBytes state = optim::AdamW::planned_bytes(setup.config, shards);
    const dist::ParamStoreBytes held = dist::ParamStore::planned_bytes(zero, store_options);
    const int64_t total = state.master + state.state() + held.total();
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

  // Held for the whole run, in the trainer constructor's order: AdamW, the store, the model.
  AllocationReplay replay;
  const std::string between = "between steps";
  replay.hold(MemoryCategory::kMaster, e.optimizer.master, between);
  replay.hold(MemoryCategory::kOptimizerState, e.optimizer.state(), between);
  replay.hold(MemoryCategory::kWeights, e.trainer_weights, between);
  replay.hold(MemoryCategory::kGrads, e.grad_sum, between);
  replay.hold(MemoryCategory::kCommBuffers, e.comm_staging, between);
  replay.hold(MemoryCategory::kWeights, e.master_copy, between);
  const TransformerBufferBytes& m = e.model_buffers;
  replay.hold(MemoryCategory::kActivations, m.activation_total(), between);
  const int64_t persistent = e.optimizer.master + e.optimizer.state() + e.trainer_weights + e.grad_sum +
                             e.comm_staging + e.master_copy + m.activation_total();
  replay_training_step(replay, spec, dist::ZeroLayout(units, world_size, e.peak_rank), config, compute_from_master);
  e.step_bytes = replay.peaks();
  e.step_peak_bytes = replay.total_peak();
  e.step_peak_moment = replay.peak_moment();
  e.unit_weights = e.bytes(MemoryCategory::kWeights) - e.trainer_weights - e.master_copy;
  e.unit_grads = e.bytes(MemoryCategory::kGrads) - e.grad_sum;
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
  e.load_peak_bytes = persistent - m.activation_total() + e.initial_weights;
  e.built_bytes = persistent;
  e.load_peak_moment = e.from_file ? "while loading model.path, one unit's fp32 values at a time"
                                   : "while setting up the first weights, one unit's fp32 values at a time";
  e.peak_bytes = std::max(e.step_peak_bytes, e.load_peak_bytes);

  e.nominal = optim::bytes_per_param(optim::parse_state_format(config.optimizer.state),
                                     optim::parse_master_mode(config.optimizer.master),
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
  return e;
}

int64_t MemoryEstimate::held_bytes(MemoryCategory c) const {
  switch (c) {
    case MemoryCategory::kWeights: return trainer_weights + master_copy;
    case MemoryCategory::kGrads: return grad_sum;
    case MemoryCategory::kMaster: return optimizer.master;
    case MemoryCategory::kOptimizerState: return optimizer.state();
    default: return 0;
  }
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

// memory_estimate.cpp — see memory_estimate.h. Each function mirrors the constructor it names,
// allocation by allocation, and replay_unit_mode_step the unit-mode step in code order;
// tests/train/test_memory_estimate.cpp catches any drift by comparing with the tracker after
// real training steps.
#include "framework/train/memory_estimate.h"
#include "framework/train/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "framework/core/error.h"
#include "framework/dist/zero_layout.h"
#include "framework/train/optimizer_setup.h"
#include "kernels/numerics/block_quant4.h"
#include "models/common/presets.h"

namespace farthing::train {

namespace {

// models/common/transformer.cpp's Carver: every carved array is rounded up to 16 floats.
int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// framework/optim/adamw.cpp's state layout: every segment's values and absmax aligned to 64 B.
int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t moment_value_bytes(optim::StateFormat format, int64_t numel) {
  switch (format) {
    case optim::StateFormat::kF32: return numel * 4;
    case optim::StateFormat::kBf16: return numel * 2;
    case optim::StateFormat::kBlock8: return numel;
    case optim::StateFormat::kBlock4: return (numel + 1) / 2;
  }
  return 0;
}

int64_t absmax_bytes(optim::StateFormat format, int64_t numel) {
  if (format == optim::StateFormat::kBlock8) return ceil_div(numel, int64_t(optim::kQuantBlockElems)) * 4;
  if (format == optim::StateFormat::kBlock4) return ceil_div(numel, int64_t(numerics::kQuant4BlockElems)) * 4;
  return 0;
}

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

// One unit-mode training step on top of what `replay` already holds (the persistent buffers),
// in code order. The model over ZeroUnitStorage (transformer.cpp, zero_unit_storage.cpp):
//   a gather (started by prefetch_params right after the previous unit's acquire, or by
//     acquire_unit itself): the send slot (L_u owned elements, zero-padded, bf16 or the fp32
//     master) and the receive buffer (P_u fp32 parameters for the master, else P_u bf16);
//   acquire_unit: for bf16 the fp32 parameters (P_u) widened from the receive buffer, which goes
//     with the send slot; then at bf16/fp16 compute the unit's 16-bit GEMM copy (its span);
//   G() on a unit's first gradient: a zero-filled fp32 accumulator (P_u);
//   unit_grads_done: the owned block (L_u f32) and MpiCommunicator::reduce_scatter's received
//     blocks (world · L_u = P_u f32), then the accumulator and the blocks go, and the trainer's
//     on_unit_grads runs (with the optimizer fused in, AdamW's two small all-reduces).
// On one rank both collectives are skipped: acquire_unit copies or widens the owned unit straight
// into its fp32 parameters (P_u), no send slot, receive buffer or received blocks, no prefetch.
// Order: the embedding is acquired first and kept to the end (a tied head reads it last, so
// then its gradients live from the loss to the end); blocks one at a time forward; the head
// from the final norm until its norm's backward; blocks again in reverse with their gradients;
// the embedding's gradients last. Evaluation runs the same forward without gradients: lower.
void replay_unit_mode_step(AllocationReplay& replay, const models::TransformerSpec& spec,
                           const dist::ZeroLayout& zero, const recipe::RunConfig& config, bool gather_f32) {
  using C = MemoryCategory;
  const models::FlatLayout& layout = spec.layout;
  const auto& units = layout.units();
  const bool narrow = config.train.precision != "fp32";
  const bool fused = config.train.optimizer_in_backward;
  const int64_t world = zero.world_size();
  const bool solo = world == 1;
  const int64_t send_elem_bytes = gather_f32 ? 4 : 2;
  std::vector<char> has_grads(units.size(), 0);

  // A gather (ZeroUnitStorage::start_gather): the send slot, and the receive buffer — the fp32
  // parameters themselves when the master is gathered, else bf16 to widen on acquire.
  std::vector<char> in_flight(units.size(), 0);
  auto start_gather = [&](size_t u, const std::string& at) {
    if (solo) return;
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
    if (solo) {
      replay.hold(C::kWeights, padded * 4, phase + ": widening " + units[u].name);
    } else if (!gather_f32) {  // widened into the fp32 parameters, then the receive buffer goes
      replay.hold(C::kWeights, padded * 4, at);
      replay.drop(C::kCommBuffers, padded * 2);
    }
    if (!solo) replay.drop(C::kCommBuffers, shard * send_elem_bytes);
    if (narrow) replay.hold(C::kWeights, units[u].span_elems() * 2, phase + ": " + units[u].name + " in use");
  };
  auto release = [&](size_t u) {
    if (narrow) replay.drop(C::kWeights, units[u].span_elems() * 2);
    replay.drop(C::kWeights, zero.padded_elems(u) * 4);
  };
  auto grads = [&](size_t u, const std::string& phase) {
    if (has_grads[u]) return;
    has_grads[u] = 1;
    replay.hold(C::kGrads, zero.padded_elems(u) * 4, phase + ": " + units[u].name + "'s gradients");
  };
  auto grads_done = [&](size_t u) {
    if (!has_grads[u]) return;
    has_grads[u] = 0;
    const int64_t shard = zero.shard_elems(u), padded = zero.padded_elems(u);
    const std::string at = "backward: reduce-scattering " + units[u].name + "'s gradients";
    if (solo) {  // the owner's step reads the accumulator itself
      replay.drop(C::kGrads, padded * 4);
      return;
    }
    replay.hold(C::kCommBuffers, shard * 4, at);
    replay.touch(C::kCommBuffers, padded * 4, at);
    replay.drop(C::kGrads, padded * 4);
    if (fused) {  // AdamW's inspect_shard_grads and step_shards reduce 2 and 4 doubles
      replay.touch(C::kCommBuffers, all_reduce_temp_bytes(2, world, 8), at);
      replay.touch(C::kCommBuffers, all_reduce_temp_bytes(4, world, 8), at);
    }
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
  // unit_mode_step after backward: the micro-batch loss sums; unfused, AdamW's two reductions.
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
      if (e.unit_mode) {
        return std::string("more ranks (--world-size) shrink the owned shards; the gathered units stay whole (the "
                           "embedding for the whole step, the largest block or head beside it), so a smaller "
                           "vocabulary or block only helps those") +
               (e.grad_sum > 0 ? "; train.optimizer_in_backward drops the owned gradient sums" : "");
      }
      return std::string("distributed.zero_stage 3 (weights and gradients sharded, units gathered when used) or "
                         "train.optimizer_in_backward; without them weights and gradients are whole on every rank") +
             (e.grad_sum > 0 ? "; train.grad_accum 1 drops the gradient sum" : "");
    case MemoryCategory::kCommBuffers:
    case MemoryCategory::kOther:
      return "fewer ranks or ZeRO stage 1";
  }
  return "";
}

}  // namespace

TransformerBufferBytes transformer_buffer_bytes(const models::TransformerSpec& spec, int64_t batch, int64_t seq,
                                                const models::ModelOptions& options) {
  // Mirrors Transformer::Transformer (models/common/transformer.cpp): params_, grads_, working_,
  // then carve_acts (acts_), carve_scratch (scratch_) and bf16_scratch_.
  const models::ModelConfig& c = spec.config;
  const int64_t M = batch * seq, C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim(), V = c.vocab_size;
  const int64_t F = c.family == models::ModelFamily::kLlama ? 2 * H : H;
  const int64_t R = std::min(options.loss_chunk_rows, M);
  const int64_t n = spec.layout.total_elems();
  const bool narrow = options.compute != models::ComputeMode::kF32;

  TransformerBufferBytes b;
  b.params = n * 4;
  b.grads = n * 4;
  b.working = narrow ? n * 2 : 0;

  // Per-block checkpointing keeps one set of block activations instead of one per layer.
  const int64_t sets = options.checkpointing == models::Checkpointing::kPerBlock ? 1 : c.n_layers;
  const int64_t per_set = round16(M * C) +                   // n1
                          2 * round16(M) +                   // n1_mean, n1_rstd
                          round16(M * Sq) +                  // qkv
                          round16(M * C) +                   // att
                          round16(batch * c.n_heads * seq) +  // lse
                          round16(M * C) +                   // mid
                          round16(M * C) +                   // n2
                          2 * round16(M) +                   // n2_mean, n2_rstd
                          round16(M * F) +                   // fc
                          round16(M * H);                    // act
  const int64_t act_floats = round16((c.n_layers + 1) * M * C) +  // resid_
                             sets * per_set +
                             round16(M * C) + 2 * round16(M);       // nf_, nf_mean_, nf_rstd_
  b.activations = act_floats * 4;

  const int64_t scratch_floats = 3 * round16(M * C) +  // dres_, dn_, datt_
                                 round16(M * Sq) +     // dqkv_
                                 round16(M * F) +      // dfc_
                                 round16(M * H) +      // dact_
                                 round16(2 * batch * c.n_heads * seq * c.head_dim()) +  // att_scratch_
                                 round16(R * V);       // logits_
  b.scratch = scratch_floats * 4;

  if (narrow) {
    const int64_t slot_elems = round16(std::max(M * std::max({C, H, F, Sq}), R * V));
    b.narrow_scratch = 2 * slot_elems * 2;
  }
  return b;
}

AdamWStateBytes adamw_state_bytes(const optim::OptimizerConfig& config, const std::vector<optim::ShardSpec>& shards) {
  // Mirrors AdamW::AdamW (framework/optim/adamw.cpp): per shard, one segment per range it
  // meets; m and v are two buffers of the same layout.
  AdamWStateBytes b;
  const int64_t master_per_elem = config.master_mode == optim::MasterMode::kF32           ? 4
                                  : config.master_mode == optim::MasterMode::kRemainder16 ? 2
                                                                                          : 0;
  for (const optim::ShardSpec& shard : shards) {
    const uint64_t shard_begin = shard.global_offset, shard_end = shard_begin + shard.numel;
    b.owned_elems += int64_t(shard.numel);
    b.master += int64_t(shard.numel) * master_per_elem;
    for (const optim::ParamRange& range : config.ranges) {
      const uint64_t begin = std::max(shard_begin, range.global_offset);
      const uint64_t end = std::min(shard_end, range.global_offset + range.numel);
      if (begin >= end) continue;
      const optim::StateFormat format = optim::effective_state_format(config, range);
      const int64_t numel = int64_t(end - begin);
      b.moment_values += 2 * align64(moment_value_bytes(format, numel));
      if (optim::is_quantized(format)) b.absmax += 2 * align64(absmax_bytes(format, numel));
    }
  }
  return b;
}

MemoryEstimate estimate_memory(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size) {
  const recipe::TrainSection& t = config.train;
  FARTHING_CHECK(world_size >= 1, "world size ", world_size, " must be at least 1");
  FARTHING_CHECK(config.data.seq_len <= model.max_seq_len, "data.seq_len (", config.data.seq_len,
                 ") exceeds the model's max_position_embeddings (", model.max_seq_len, ")");

  MemoryEstimate e;
  e.model = model;
  e.world_size = world_size;
  e.zero_stage = config.distributed.zero_stage;
  e.optimizer_in_backward = t.optimizer_in_backward;
  e.unit_mode = e.zero_stage == 3 || e.optimizer_in_backward;  // trainer.cpp's unit_mode_
  const models::TransformerSpec spec = models::make_spec(model);
  const models::FlatLayout& layout = spec.layout;
  e.param_count = layout.param_count();
  e.flat_elems = layout.total_elems();

  e.model_buffers = transformer_buffer_bytes(spec, t.micro_batch, config.data.seq_len, model_options_of(config));
  if (e.unit_mode) {  // over a UnitStorage the model allocates neither of the three
    e.model_buffers.params = e.model_buffers.grads = e.model_buffers.working = 0;
  }

  const OptimizerSetup setup = make_optimizer_setup(layout, config.optimizer, t.seed);
  const std::vector<dist::UnitRange> units = unit_ranges(layout);
  // In unit mode the bf16 weights and the gradient sums are the owned shards too, so the rank
  // that owns the most holds the most; otherwise only the master and moments differ by rank.
  auto per_rank_bytes = [&](const AdamWStateBytes& state) {
    int64_t bytes = state.master + state.state();
    if (e.unit_mode) bytes += state.owned_elems * (e.optimizer_in_backward ? 2 : 2 + 4);
    return bytes;
  };
  int64_t best_total = -1;
  for (int rank = 0; rank < world_size; ++rank) {
    const dist::ZeroLayout zero(units, world_size, rank);
    const std::vector<optim::ShardSpec> shards = zero.owned_shards();
    FARTHING_CHECK(!shards.empty(), "at world size ", world_size, " rank ", rank, " owns no parameters (",
                   e.flat_elems, " elements in ", units.size(), " units of at least 256 per rank); "
                   "AdamW needs at least one shard per rank: use fewer ranks");
    const AdamWStateBytes state = adamw_state_bytes(setup.config, shards);
    if (per_rank_bytes(state) <= best_total) continue;
    best_total = per_rank_bytes(state);
    e.peak_rank = rank;
    e.optimizer = state;
    e.quantized_state_elems = 0;
    for (const optim::ShardSpec& s : shards) {
      for (const optim::ParamRange& r : setup.config.ranges) {
        const uint64_t begin = std::max(s.global_offset, r.global_offset);
        const uint64_t end = std::min(s.global_offset + s.numel, r.global_offset + r.numel);
        if (begin < end && optim::is_quantized(optim::effective_state_format(setup.config, r))) {
          e.quantized_state_elems += int64_t(end - begin);
        }
      }
    }
    if (e.unit_mode) continue;  // no ZeroCollectives; the collectives are replayed below
    // ZeroCollectives' constructor: one f32 staging buffer of the largest P_u that needs one
    // (none at world size 1, where every unit's storage is its aligned span).
    int64_t staging_elems = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      if (zero.needs_staging(u)) staging_elems = std::max(staging_elems, zero.padded_elems(u));
    }
    e.comm_staging = staging_elems * 4;
    e.comm_transient = comm_transient_bytes(zero, e.zero_stage, t.grad_accum);
  }

  auto at = [&](MemoryCategory c) -> int64_t& { return e.step_bytes[size_t(c)]; };
  const TransformerBufferBytes& m = e.model_buffers;
  // ckpt::read_model_file holds every tensor as fp32 while the first weights are set up.
  const int64_t file_bytes = config.model.path.empty() ? 0 : e.param_count * 4;
  if (e.unit_mode) {
    const int64_t owned = e.optimizer.owned_elems;
    e.trainer_weights = owned * 2;
    e.grad_sum = e.optimizer_in_backward ? 0 : owned * 4;
    // Held for the whole run (trainer.cpp's constructor, AdamW's, the model's activations).
    AllocationReplay replay;
    const std::string between = "between steps";
    replay.hold(MemoryCategory::kWeights, e.trainer_weights, between);
    replay.hold(MemoryCategory::kGrads, e.grad_sum, between);
    replay.hold(MemoryCategory::kMaster, e.optimizer.master, between);
    replay.hold(MemoryCategory::kOptimizerState, e.optimizer.state(), between);
    replay.hold(MemoryCategory::kActivations, m.activation_total(), between);
    // ZeroUnitStorage gathers the fp32 master under precision fp32 + master f32 (trainer.cpp's
    // params_from_master_), the bf16 weights otherwise.
    const bool gather_f32 = t.precision == "fp32" && setup.config.master_mode == optim::MasterMode::kF32;
    replay_unit_mode_step(replay, spec, dist::ZeroLayout(units, world_size, e.peak_rank), config, gather_f32);
    e.step_bytes = replay.peaks();
    e.step_peak_bytes = replay.total_peak();
    e.step_peak_moment = replay.peak_moment();
    e.unit_weights = at(MemoryCategory::kWeights) - e.trainer_weights;
    e.unit_grads = at(MemoryCategory::kGrads) - e.grad_sum;
    e.comm_transient = at(MemoryCategory::kCommBuffers);

    // trainer.cpp's constructor: AdamW (master, moments) and the model (activations) exist when
    // the whole fp32 buffer for the first weights is made; the file's tensors go before the
    // owned bf16 weights are cut from it.
    e.initial_weights = e.flat_elems * 4;
    e.load_peak_bytes = e.optimizer.master + e.optimizer.state() + m.activation_total() + e.initial_weights +
                        std::max(file_bytes, e.trainer_weights);
    e.load_peak_moment = config.model.path.empty()
                             ? "while setting up the first weights: a whole fp32 copy, then this rank's shards"
                             : "while loading model.path: its fp32 tensors and a whole fp32 copy of the weights";
  } else {
    e.trainer_weights = e.flat_elems * 2;
    e.grad_sum = t.grad_accum > 1 ? e.flat_elems * 4 : 0;
    at(MemoryCategory::kWeights) = m.params + m.working + e.trainer_weights;
    at(MemoryCategory::kGrads) = m.grads + e.grad_sum;
    at(MemoryCategory::kMaster) = e.optimizer.master;
    at(MemoryCategory::kOptimizerState) = e.optimizer.state();
    at(MemoryCategory::kActivations) = m.activation_total();
    at(MemoryCategory::kCommBuffers) = e.comm_staging + e.comm_transient;
    for (int64_t b : e.step_bytes) e.step_peak_bytes += b;
    e.step_peak_moment = e.comm_transient > 0 ? "gradient reduction (everything above at once)"
                                              : "backward (everything above at once)";
    if (file_bytes > 0) {
      // trainer.cpp's constructor: ZeroCollectives and AdamW, then the model, exist while the
      // file's tensors are copied in; the bf16 weights come after the file is released.
      e.load_peak_bytes = file_bytes + e.comm_staging + e.optimizer.master + e.optimizer.state() + m.params +
                          m.grads + m.working + m.activation_total();
      e.load_peak_moment = "while loading model.path";
    }
  }
  e.peak_bytes = std::max(e.step_peak_bytes, e.load_peak_bytes);

  const bool compute_f32 = t.precision == "fp32";
  e.nominal = optim::bytes_per_param(optim::parse_state_format(config.optimizer.state),
                                     optim::parse_master_mode(config.optimizer.master),
                                     compute_f32 ? DType::kF32 : DType::kBF16, compute_f32 ? DType::kF32 : DType::kBF16);
  // §6's ZeRO rows: stage 1 divides the master and moments over the ranks, stage 2 the gradients
  // too, unit mode the weights as well; a step fused into backward keeps no gradients.
  e.nominal.master /= double(world_size);
  e.nominal.moments /= double(world_size);
  if (e.zero_stage >= 2 || e.unit_mode) e.nominal.grads /= double(world_size);
  if (e.unit_mode) e.nominal.weights /= double(world_size);
  if (e.optimizer_in_backward) e.nominal.grads = 0.0;
  return e;
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
    check.message += e.unit_mode ? ". The peak itself comes before training, around a whole fp32 copy of the weights (" +
                                       format_bytes(e.initial_weights) + ") that more ranks do not shrink"
                                 : ". The peak itself comes while model.path loads, its fp32 tensors (" +
                                       format_bytes(e.param_count * 4) + ") beside the model's buffers";
  }
  return check;
}


}  // namespace farthing::train

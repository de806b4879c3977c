// memory_estimate.cpp — see memory_estimate.h. Each function mirrors the constructor it names,
// allocation by allocation; tests/train/test_memory_estimate.cpp catches any drift by
// comparing with the tracker after real training steps.
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
      return std::string("a smaller model: weights and gradients are whole on every rank (ZeRO stage 3 is not "
                         "available yet)") + (e.grad_sum > 0 ? "; train.grad_accum 1 drops the gradient sum" : "");
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
  // The trainer's unit mode (parameters and gradients gathered and released unit by unit) has
  // other allocations; until it is estimated, say so rather than predict the whole-buffer layout.
  FARTHING_CHECK(config.distributed.zero_stage != 3 && !config.train.optimizer_in_backward,
                 "farthing plan does not estimate distributed.zero_stage 3 or train.optimizer_in_backward yet "
                 "(zero_stage ", config.distributed.zero_stage, ", optimizer_in_backward ",
                 config.train.optimizer_in_backward ? "true" : "false", "); plan stage 1 or 2 without it");
  FARTHING_CHECK(config.data.seq_len <= model.max_seq_len, "data.seq_len (", config.data.seq_len,
                 ") exceeds the model's max_position_embeddings (", model.max_seq_len, ")");

  MemoryEstimate e;
  e.model = model;
  e.world_size = world_size;
  e.zero_stage = config.distributed.zero_stage;
  const models::TransformerSpec spec = models::make_spec(model);
  const models::FlatLayout& layout = spec.layout;
  e.param_count = layout.param_count();
  e.flat_elems = layout.total_elems();

  e.model_buffers = transformer_buffer_bytes(spec, t.micro_batch, config.data.seq_len, model_options_of(config));
  e.trainer_weights = e.flat_elems * 2;
  e.grad_sum = t.grad_accum > 1 ? e.flat_elems * 4 : 0;

  const OptimizerSetup setup = make_optimizer_setup(layout, config.optimizer, t.seed);
  const std::vector<dist::UnitRange> units = unit_ranges(layout);
  int64_t best_total = -1;
  for (int rank = 0; rank < world_size; ++rank) {
    const dist::ZeroLayout zero(units, world_size, rank);
    const std::vector<optim::ShardSpec> shards = zero.owned_shards();
    FARTHING_CHECK(!shards.empty(), "at world size ", world_size, " rank ", rank, " owns no parameters (",
                   e.flat_elems, " elements in ", units.size(), " units of at least 256 per rank); "
                   "AdamW needs at least one shard per rank: use fewer ranks");
    const AdamWStateBytes state = adamw_state_bytes(setup.config, shards);
    if (state.master + state.state() <= best_total) continue;
    best_total = state.master + state.state();
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
  at(MemoryCategory::kWeights) = m.params + m.working + e.trainer_weights;
  at(MemoryCategory::kGrads) = m.grads + e.grad_sum;
  at(MemoryCategory::kMaster) = e.optimizer.master;
  at(MemoryCategory::kOptimizerState) = e.optimizer.state();
  at(MemoryCategory::kActivations) = m.activation_total();
  at(MemoryCategory::kCommBuffers) = e.comm_staging + e.comm_transient;
  for (int64_t b : e.step_bytes) e.step_peak_bytes += b;

  if (!config.model.path.empty()) {
    // ckpt::read_model_file holds every tensor as fp32 while the model is built and filled.
    e.load_peak_bytes = e.param_count * 4 + m.params + m.grads + m.working + m.activation_total();
  }
  e.peak_bytes = std::max(e.step_peak_bytes, e.load_peak_bytes);

  const bool compute_f32 = t.precision == "fp32";
  e.nominal = optim::bytes_per_param(optim::parse_state_format(config.optimizer.state),
                                     optim::parse_master_mode(config.optimizer.master),
                                     compute_f32 ? DType::kF32 : DType::kBF16, compute_f32 ? DType::kF32 : DType::kBF16);
  // §6's ZeRO row: stage 1 divides the master and moments over the ranks, stage 2 the gradients too.
  e.nominal.master /= double(world_size);
  e.nominal.moments /= double(world_size);
  if (e.zero_stage >= 2) e.nominal.grads /= double(world_size);
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
  const char* when = e.load_peak_bytes > e.step_peak_bytes ? ", while loading model.path" : "";
  check.message = "over budget: predicted peak " + format_bytes(e.peak_bytes) + " per rank (rank " +
                  std::to_string(e.peak_rank) + " of " + std::to_string(e.world_size) + when + ") exceeds the " +
                  format_bytes(budget_bytes) + " budget by " + format_bytes(e.peak_bytes - budget_bytes) +
                  "; the largest part is " + std::string(memory_category_name(MemoryCategory(largest))) + " (" +
                  format_bytes(e.step_bytes[size_t(largest)]) + "). To shrink it: " +
                  shrink_advice(MemoryCategory(largest), e);
  return check;
}


}  // namespace farthing::train

// memory_estimate.h — what a training run will hold on each rank, computed from its recipe and
// its model's config before anything is allocated: the arithmetic behind `farthing plan`
// (docs/design.md §6).
//
// One source of truth: every size comes from the code that allocates it, and this file only adds
// them up. Held for the run: AdamW::planned_bytes (master and moments over the rank's ZeRO
// shards), ParamStore::planned_bytes (bf16 weights, kept gradients, staging, the master's whole
// copy) and Transformer::buffer_bytes (the activations, the constructor's own carving). During a
// step units come and go, so categories may peak at different moments: ParamStore::
// planned_unit_bytes says what a unit costs at each moment of its use (gathered, acquired,
// accumulating and reducing its gradients, stepping fused), Transformer::unit_buffer_bytes what
// the model adds to a unit in use, and Transformer::unit_schedule which units a step holds
// together (the embedding for the whole step, one other unit at a time beside it with the next
// one's gather in flight, a tied head's gradients from the loss on). The step's peak, per
// category and in total, is the largest of those combinations, named by the first moment that
// reaches it. So the prediction is of what the memory tracker (framework/core/memory.h) counts,
// and a real run's tracked peaks check it; the dataset, the tokenizer and the kernels' per-thread
// scratch are not tracked, and not predicted. On CUDA the ops' workspace is tracked, and planned
// only in part (ops_workspace).
// Relies on: models/common (spec, layout, Transformer's sizes), framework/dist (ZeroLayout,
// ParamStore's sizes), train/loop/optimizer_setup.h, framework/optim (AdamW's sizes, memory_plan.h).
// Tested by: tests/train/plan/test_memory_estimate.cpp (real Trainer runs at every stage, fused and
// not, from presets and files, np 1/2/3, to the byte; budget refusal); the owners' per-unit
// figures by tests/dist/test_param_store_plan.cpp.
#pragma once

#include "train/loop/progress.h"  // format_bytes

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/memory.h"
#include "framework/optim/adamw.h"
#include "framework/optim/memory_plan.h"
#include "framework/optim/optim_config.h"
#include "train/recipe/run_config.h"
#include "models/common/model_config.h"
#include "models/common/transformer.h"

namespace farthing::train {

using models::TransformerBufferBytes;  // models::Transformer::buffer_bytes

// One rank's memory during training.
struct MemoryEstimate {
  models::ModelConfig model;
  int64_t param_count = 0;  // parameters (a tied head counted once)
  int64_t flat_elems = 0;   // the flat parameter space, alignment gaps included
  int world_size = 1;
  int zero_stage = 1;
  int peak_rank = 0;        // the rank with the largest peak (ranks own unequal shards)
  int64_t quantized_state_elems = 0;  // owned elements of peak_rank whose moments are 8/4-bit

  bool optimizer_in_backward = false;
  bool from_file = false;  // model.path (else a preset's random init)

  TransformerBufferBytes model_buffers;
  int64_t trainer_weights = 0;  // the store's bf16 weights: whole at stages 1-2, owned shards at 3 (kWeights)
  int64_t grad_sum = 0;         // the store's kept gradients: whole at stage 1, owned at 2-3, none fused (kGrads)
  int64_t grad_bytes_per_elem = 0;  // of the kept gradients: 2 (bf16, one backward) or 4 (fp32)
  bool grad_sums = false;  // kept gradients are sums (grad_accum > 1 or several ranks): fp32 whatever grad_dtype says
  int64_t master_copy = 0;      // precision fp32 + f32 master over several ranks at stages 1-2: the gathered master (kWeights)
  optim::AdamWStateBytes optimizer;  // peak_rank's shards (AdamW::planned_bytes); on_host: offloaded
  optim::OffloadOptions offload;     // as the trainer builds the optimizer (the ring's slots hold offload.grad_dtype)
  // On CUDA under bf16 compute: the bf16 copies cuDNN attention's backward carves from the ops'
  // workspace (framework/backend/cuda_ops_workspace.h) of what the model keeps fp32 (none under
  // bf16 activations), or a biased linear's bias operand or bias gradient (Qwen's qkv, GPT-2's
  // linears) when that is more, counted with the activations. Where cuDNN runs attention, a
  // lower bound of that workspace: cuDNN's own bytes, known once its graph is built on the GPU,
  // and the growth slack are not in it. Without cuDNN the fp32 kernel takes other scratch, not
  // counted here: its backward's partials, and O, qkv, dO and dqkv in fp32 where they are stored
  // as bf16. 0 elsewhere (the CPU and the strict device take none).
  int64_t ops_workspace = 0;
  int64_t comm_staging = 0;     // ZeroCollectives' staging buffer, held for the run (kCommBuffers)
  int64_t comm_transient = 0;   // the largest collective's buffers and MPI temporaries, at their peak (kCommBuffers)
  // At each category's peak: the units' fp32 parameters and 16-bit GEMM copies in use (the
  // embedding, kept for the whole step, beside the largest block or the head), and the units'
  // fp32 gradient accumulators alive at once (a tied head's embedding beside a block's).
  int64_t unit_weights = 0;
  int64_t unit_grads = 0;
  // Gradient bookkeeping on peak_rank, elements per micro-batch (the roofline's rows): the
  // accumulators (P_u of each unit not in place), what is zeroed of them (the whole of one added
  // to; of one overwritten, the padding past the unit and what the model zeroes itself), what is
  // then copied, added or narrowed from them into the kept gradients (the unit's span at stage 1,
  // its owned part at 2-3; none fused), and the kept gradients written in place (their span) with
  // what of them is zeroed once a step (an embedding's table, the gaps between tensors).
  int64_t grad_accumulator_elems = 0;
  int64_t grad_zeroed_elems = 0;
  int64_t grad_kept_from_accumulator_elems = 0;
  int64_t grad_in_place_elems = 0;
  int64_t grad_zeroed_once_elems = 0;
  bool embedding_rows_once = false;  // the model sums the embedding's rows per distinct token first
  // A tied embedding or learned positions kept in place over several micro-batches: the later
  // ones set the micro-batch's token rows and the positions aside and add them back.
  bool embedding_rows_set_aside = false;
  // While the trainer is built: the flat fp32 copy of a model.path file's tensors, or one unit's
  // fp32 values made from a preset (kOther).
  int64_t initial_weights = 0;

  // peak_rank's bytes by category, each at its own peak during a training step (as the tracker's
  // per-category peaks); step_peak_bytes, the peak of their sum, can be less than their sum.
  std::array<int64_t, kNumMemoryCategories> step_bytes{};
  int64_t step_peak_bytes = 0;
  std::string step_peak_moment;  // when the step peaks, in words
  // While the trainer is built: everything held for the run beside the first weights being set up
  // (see initial_weights) and, from model.path, the file's own fp32 tensors.
  int64_t load_peak_bytes = 0;
  std::string load_peak_moment;
  int64_t built_bytes = 0;  // held once the trainer is built, before the first step (activations included)
  int64_t peak_bytes = 0;  // the larger of the two: what a rank must have

  // docs/design.md §6's per-parameter cost of the optimizer settings on one rank's device (the
  // master and moments divided over the ranks, the gradients too at ZeRO stage 2, the weights as
  // well at stage 3; no gradients with optimizer_in_backward; no master or moments with
  // optimizer.offload host, whose §6 cost is nominal_host's).
  optim::BytesPerParam nominal;
  optim::BytesPerParam nominal_host;  // optimizer.offload host: §6's master and moments, in host memory

  int64_t bytes(MemoryCategory c) const { return step_bytes[size_t(c)]; }
  // Model state on the training device: what the run holds from start to end per category
  // (weights, grads, master, optimizer state), without the units that come and go during a step
  // (unit_weights, unit_grads). With optimizer.offload host the master and moments are not here.
  int64_t held_bytes(MemoryCategory c) const;
  // optimizer.offload host: what the optimizer holds in host memory for the run (master, moments,
  // the ring of transfer buffers: optimizer.host_ring); 0 otherwise.
  int64_t host_bytes() const;
  // optimizer.offload host: the host's peak while the trainer is built: host_bytes() and, beside
  // it, one unit's fp32 first values (made on the host before they go to the device) or
  // init_master's staging of one shard (optimizer.host_init_staging), whichever is larger (on
  // train.device cpu, where the values stay, both). 0 otherwise.
  int64_t host_load_peak_bytes = 0;
  int64_t model_state_bytes() const;
  double bytes_per_param(MemoryCategory c) const { return double(bytes(c)) / double(param_count); }
};

// The per-rank estimate for `config` training `model` over world_size ranks: for `rank`, or with
// rank -1 for the rank that holds the most. Throws naming the recipe key when the run could not
// be built (seq_len past the model's positions, a rank with no shard).
MemoryEstimate estimate_memory(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                               int rank = -1);

// Whether the predicted peak fits budget_bytes; the message says by how much it does or does
// not, and what would shrink it.
struct BudgetCheck {
  bool fits = true;
  std::string message;
};
BudgetCheck check_budget(const MemoryEstimate& estimate, int64_t budget_bytes);


}  // namespace farthing::train

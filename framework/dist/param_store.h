// param_store.h — one rank's parameters and gradients, unit by unit, at every ZeRO stage: the
// storage the model runs over during training (unit_storage.h).
//
// What it keeps (docs/design.md §2-3, §6):
//   bf16 weights, the only copy of the weights: the whole model at stages 1-2, only this rank's
//     owned shards at stage 3 (compactly, in shard order);
//   gradients, as each stage defines them:
//     stage 1: the whole gradient on every rank (each unit all-reduced as backward finishes it);
//     stage 2: only the owned shard, each unit reduce-scattered as backward finishes it;
//     stage 3: as stage 2 (and the weights are owned shards only);
//     none with the optimizer step fused into backward: each unit's owned gradient goes to the
//     hook (the trainer steps it) and is freed.
//   Over several ranks a unit's reduction is issued when backward hands the unit over, and may
//   stay in flight beside the next units' backward (ParamStoreOptions::reduce_bucket_bytes).
//   Gathers and reductions are finished with CommHandle::wait_on_device: on a GPU with NCCL the
//   compute stream waits for them on the device, so the host never blocks on a collective here;
//   with MPI (host memory, or the staged path for device memory) the host waits, as before.
// Kept gradients are fp32 where they are a sum of several backward passes (grad_accum > 1 or
// more than one rank: summed in fp32 in a fixed order); one backward's gradient, read once by
// the optimizer (world 1, grad_accum 1), is kept as ParamStoreOptions::one_backward_grad_dtype
// says: bf16, or fp32 (train.grad_dtype; fp32 by default under precision fp32).
// Gradients in place: alone (world 1) with fp32 kept gradients, a unit whose gradients the model
// forms whole once per element (UnitStorage::GradAdds::kOnce) is handed its kept gradients
// themselves, written by the step's first backward and added to by the later ones: no
// accumulator, no zeroing, no copy or add per micro-batch, and the same bits
// (docs/parameter_store.md). So is one at stage 1 over several ranks with one backward a step:
// each rank writes its own gradient into its whole kept copy, which the all-reduce sums in
// place. Other units, and units whose reduction needs each backward's own gradient (several
// backwards a step over ranks, stages 2-3) or kept in bf16 or fused, use an accumulator: a kOnce
// unit's is written, not zeroed (only the padding past the unit's end is).
// Transient: a unit's parameters while the model uses it — under bf16 compute the bf16 weights
// themselves (no copy where this rank holds them; gathered from the owners at stage 3), else
// fp32, widened exactly (or gathered and widened) — with the next unit's gather prefetched; and
// a unit's fp32 gradient accumulator during its backward where it is not in place. Under precision fp32 with an fp32 master the compute
// reads the master's values instead (the owned master at world 1; at stages 1-2 over several
// ranks a whole fp32 copy gathered after each step; at stage 3 gathered per unit).
//
// NOTE (numerics): gathers move exact values; gradient sums over ranks are the communicator's
// fixed rank order, and sums over micro-batches are ((g0 + g1) + g2)..., so np=N with one
// micro-batch each equals np=1 with N micro-batches bit for bit, at every stage.
// Sizes: planned_bytes (held for the run) and planned_unit_bytes (a unit in use, moment by
// moment) are the store's own statement of what it allocates, for `farthing plan`.
// Relies on: dist/{zero_layout,communicator,zero_collectives,unit_storage}.h, backend/backend.h.
// Tested by: tests/train/loop/test_train_mpi.sh (np 1/2/3 × stages 1-3), test_train_resume.sh,
// test_train_grads_in_place.sh (in place against np=2's accumulators),
// tests/dist/test_param_store_plan.cpp (planned_unit_bytes against the tracker, call by call),
// tests/train/plan/test_memory_estimate.cpp (every buffer of real training steps, to the byte).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/dist/communicator.h"
#include "framework/dist/unit_storage.h"
#include "framework/dist/zero_collectives.h"
#include "framework/dist/zero_layout.h"

namespace farthing::dist {

struct ParamStoreOptions {
  int zero_stage = 1;
  int64_t grad_accum = 1;
  bool optimizer_in_backward = false;
  // Precision fp32 with an fp32 master: the compute reads the master's exact values.
  bool compute_from_master = false;
  // What one backward's kept gradient is stored as (one rank, grad_accum 1): kBF16 or kF32
  // (train.grad_dtype). Sums over micro-batches or ranks are fp32 whatever this says.
  DType one_backward_grad_dtype = DType::kBF16;
  // Over several ranks: the gradient reductions of finished units that may stay in flight while
  // backward goes on, in bytes of what they hold (the unit's accumulator, its received block,
  // the communicator's temporaries: planned_unit_bytes' `reducing`). A reduction is issued as
  // backward hands a unit over; the oldest ones are finished (their sums kept, or stepped by the
  // hook) once those in flight hold more than this, and all of them when backward ends
  // (backward_done). 0: each one finishes before backward goes on. The sums are the same either
  // way; only when they are waited for changes (distributed.reduce_bucket_mib).
  int64_t reduce_bucket_bytes = 0;
};

// What a kept gradient is stored as, for these options over `world_size` ranks (see the header).
DType kept_gradient_dtype(const ParamStoreOptions& options, int world_size);

// What a ParamStore holds for the whole run, in bytes (its constructor allocates exactly these):
// `farthing plan` adds them up rather than repeating them.
struct ParamStoreBytes {
  int64_t weights = 0;      // bf16: whole at stages 1-2, owned shards at 3 (kWeights)
  int64_t grads = 0;        // kept gradients: whole at stage 1, owned at 2-3, none fused (kGrads)
  int64_t master_copy = 0;  // compute from the master at stages 1-2 over several ranks: its whole copy (kWeights)
  int64_t staging = 0;      // ZeroCollectives' staging at stages 1-2 over several ranks (kCommBuffers)
  int64_t total() const { return weights + grads + master_copy + staging; }
};

// One unit's buffers at one moment, by the category the tracker charges them to, in bytes.
struct UnitBytes {
  int64_t weights = 0;  // kWeights
  int64_t grads = 0;    // kGrads
  int64_t comm = 0;     // kCommBuffers
  int64_t total() const { return weights + grads + comm; }
};

// What using one unit costs a ParamStore on this rank, moment by moment, in bytes: the store's
// own answer to "what does a unit in use hold", so that `farthing plan` composes these figures
// with the model's schedule (models::Transformer::unit_schedule) instead of repeating the calls.
// planned_unit_bytes (param_store.cpp) states each figure beside the code that allocates it.
struct ParamStoreUnitBytes {
  // From prefetch_params (or the start of an acquire that was not prefetched) until acquired:
  // the gather's send slot and receive buffer (ZeRO-3 over several ranks; nothing elsewhere).
  UnitBytes gathering;
  // An acquisition: what the unit holds at the call's peak (the gather included), and from its
  // return until release_params.
  struct Acquisition {
    UnitBytes peak, held;
  };
  Acquisition params;       // acquire_params: fp32 parameters
  Acquisition bf16_params;  // acquire_bf16_params: the bf16 weights themselves
  // acquire_grads until grads_ready: the fp32 accumulator (kGrads); none where in place.
  int64_t accumulator = 0;
  // A reduction over ranks from its issue in grads_ready until it is finished, the accumulator
  // included (what counts against reduce_bucket_bytes).
  UnitBytes reducing;
  // With the optimizer step fused into backward: what a finished reduction still holds while the
  // hook runs (the hook's own buffers come on top: the trainer's step, through AdamW).
  UnitBytes stepping;
};

// Whether acquire_grads hands out the kept gradients themselves for a unit the model writes as
// `adds` says (see the header).
bool grads_in_place(const ParamStoreOptions& options, int world_size, UnitStorage::GradAdds adds);

// The temporaries MpiCommunicator's all_reduce holds for n f32/f64 elements of elem_bytes over
// world ranks (mpi_communicator.cpp: the zero-padded copy and the received blocks, ceil(n/W)·W
// elements each; nothing at world 1). The store's stage-1 reduction uses it, and so does `plan`
// for the trainer's own small all-reduces.
int64_t mpi_all_reduce_temp_bytes(int64_t n, int world, int64_t elem_bytes);

class ParamStore final : public UnitStorage {
 public:
  // shard s of this rank's optimizer is zero.owned_shards()[s]; a rank owns one range per unit.
  using MasterSource = std::function<const float*(size_t shard)>;  // compute_from_master only
  // Optimizer in backward: the unit's summed gradients of this rank's owned part (in grad_dtype(),
  // as a kept gradient would be), or an empty tensor and shard -1 when it owns none of the unit.
  // Called on every rank, in unit order.
  using UnitGradsHook = std::function<void(int unit, int shard, const Tensor& owned_grads)>;

  ParamStore(const ZeroLayout& zero, Communicator& comm, Backend& backend, ParamStoreOptions options);
  static ParamStoreBytes planned_bytes(const ZeroLayout& zero, const ParamStoreOptions& options);
  // What using `unit` costs this rank (see ParamStoreUnitBytes): the calls below allocate exactly these.
  static ParamStoreUnitBytes planned_unit_bytes(const ZeroLayout& zero, const ParamStoreOptions& options, size_t unit,
                                                UnitStorage::GradAdds adds);

  const ZeroLayout& layout() const { return zero_; }
  Device device() const { return backend_.device(); }  // where the weights and gradients live
  const ParamStoreOptions& options() const { return options_; }
  const std::vector<optim::ShardSpec>& shards() const { return shards_; }
  void set_master_source(MasterSource source) { master_ = std::move(source); }
  void set_unit_grads_hook(UnitGradsHook hook) { hook_ = std::move(hook); }

  // The bf16 weight of global element g (this rank must hold it: any at stages 1-2, owned at 3).
  uint16_t* weight_at(int64_t global) const;
  Tensor weights(size_t shard) const;  // the owned shard's bf16 weights (updated in place by AdamW)
  Tensor grads(size_t shard) const;    // its kept gradients (empty with the optimizer in backward)
  DType grad_dtype() const { return grad_dtype_; }  // of kept (or, fused, stepped) gradients

  // The first weights of global elements [begin, begin + count) (values[i] is element begin + i):
  // the ones this rank holds, rounded to nearest-even. Called unit by unit, so no whole fp32 copy
  // need exist; the caller sets the master from the same values.
  void set_initial_weights(int64_t begin, int64_t count, const float* values);
  // After the owners changed their weights (a step, a checkpoint load): stages 1-2 gather every
  // owner's shards into the whole copies. Stage 3 gathers per unit when used: nothing to do.
  void publish_weights();

  // Backward of micro-batch a of this step begins: a = 0 overwrites the kept gradients (in place:
  // zeroes each unit's as it is acquired), later ones add to them.
  void begin_micro_batch(int64_t a) { micro_batch_ = a; }

  const float* acquire_params(int unit) override;
  const uint16_t* acquire_bf16_params(int unit) override;
  void release_params(int unit) override;
  void prefetch_params(int unit) override;
  UnitGrads acquire_grads(int unit, GradAdds adds) override;
  void grads_ready(int unit) override;
  void backward_done() override;

  // Bytes this rank sent in gathers and gradient reductions so far.
  int64_t bytes_sent() const { return bytes_sent_ + (collectives_ ? collectives_->bytes_communicated() : 0); }

 private:
  bool unit_is_local() const { return zero_.world_size() == 1 || options_.zero_stage < 3; }
  int shard_of(int unit) const { return shard_of_unit_[size_t(unit)]; }
  void fill_local_params(int unit, float* dst);
  void keep_gradients(int unit, int64_t micro_batch, const float* src, int64_t begin, int64_t end);
  struct Pending {  // a stage-3 gather in flight: its send slot, receive buffer and handle
    Buffer send, received;
    CommHandle handle;
  };
  void start_gather(int unit, Pending& pending);
  // A unit's gradient reduction in flight: the accumulator it reads (and, stage 1, sums into),
  // the block it sums into at stages 2-3, what it holds in all (planned reducing bytes).
  struct Reduction {
    int unit = 0;
    int64_t micro_batch = 0;
    bool in_place = false;  // stage 1: the kept gradients themselves, all-reduced (no accumulator)
    Buffer accumulator, mine;
    CommHandle handle;
    int64_t bytes = 0;
  };
  // Waits for the oldest reduction in flight and hands its sum on: kept, or to the hook.
  void finish_oldest_reduction();

  ZeroLayout zero_;
  Communicator& comm_;
  Backend& backend_;
  ParamStoreOptions options_;
  std::vector<optim::ShardSpec> shards_;
  std::vector<int> shard_of_unit_;       // the owned shard of each unit, or -1
  std::vector<int64_t> compact_offset_;  // per shard: where it starts in compact (owned-only) buffers
  bool whole_weights_ = true, whole_grads_ = true;
  DType grad_dtype_ = DType::kF32;
  Buffer weights_;       // bf16: whole (stages 1-2) or owned shards (stage 3)
  Buffer master_whole_;  // compute_from_master at stages 1-2 over several ranks: the gathered master
  Buffer grads_;         // kept gradients: whole (stage 1) or owned shards (2-3); none when fused
  std::unique_ptr<ZeroCollectives> collectives_;  // stages 1-2 over several ranks: publish_weights
  MasterSource master_;
  UnitGradsHook hook_;
  int64_t micro_batch_ = 0;
  // Per unit: fp32 parameters in use, gathered bf16 weights in use (ZeRO-3), gradient accumulator.
  std::vector<Buffer> params_, gathered_, accumulators_;
  std::vector<bool> in_place_;  // per unit: its gradients of this backward go to the kept ones
  std::vector<std::unique_ptr<Pending>> pending_;
  std::deque<Reduction> reductions_;  // in flight, oldest first
  int64_t reductions_bytes_ = 0;      // what they hold
  std::vector<GradAdds> grad_adds_;  // per unit: as its last acquire_grads said (what its reduction holds follows)
  int64_t bytes_sent_ = 0;
};

}  // namespace farthing::dist

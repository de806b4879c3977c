// adamw.h — AdamW over the shards of a global flat parameter space that this rank owns.
//
// The optimizer owns the master (fp32, or 16-bit remainders of it: MemoryCategory::kMaster) and the moments
// (kOptimizerState) of its shards; the caller owns the bf16 weights (kWeights) and the
// gradients (kGrads) and passes them to each step. A step is two calls, so that the caller
// decides what non-finite gradients mean:
//   GradReport r = opt.inspect_grads(grads, {max_grad_norm, loss_scale});  // one reduction
//   if (r.nonfinite > 0) { skip or fail: the caller's policy }
//   StepDiagnostics d = opt.step(weights, grads, r, lr_multiplier(schedule, opt.steps_taken() + 1));
// The kernels add their partial sums (gradient norms, the step's diagnostics) to sums kept in the
// device's memory, so a GPU's host waits for none of them inside a step: finish_step reads the
// step's sums once at its end. inspect_grads reads the norm back before the step (clipping and
// the non-finite check need it there when it is reduced over ranks); step_clipped_on_device
// leaves both decisions to the kernels instead.
// Each (range ∩ shard) is a segment with its group's hyper-parameters and state format,
// stepped by the backend's fused kernel (Backend::adamw_step) in one pass. The state lives on
// the backend's device, as do the weights and gradients passed in; the host only computes the
// step's scalars and sums the partials. Results are bit-identical for any sharding into
// multiples of 256, any thread count and any backend.
// With OffloadOptions::where kHost (optimizer.offload: host) the master and moments live in host
// memory instead, and a step copies each shard's gradients and weights to the host, steps them
// with the CPU kernels on a worker thread of its own (step_shards returns before they run) and
// copies the weights back (host_offload.h): the same bits as the step on the device, since both
// kernels are the one scalar definition (numerics/adamw_update.h). The weights and gradients
// passed in stay on the backend's device; the gradient inspection runs there.
// Relies on: optim_config.h, grad_clip.h, step_diagnostics.h, backend/backend.h, core/memory.h.
// Tested by: tests/optim/*, tests/backend/test_strict_device.cpp (on the strict test device),
// tests/train/loop/test_train_offload.sh and test_offload_timeline.cpp (offloaded, on the strict device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/core/tensor.h"
#include "framework/optim/grad_clip.h"
#include "framework/optim/host_offload.h"
#include "framework/optim/optim_config.h"
#include "framework/optim/step_diagnostics.h"

namespace farthing::optim {

// A named piece of raw optimizer state, for checkpoints (optim_state_io.h).
struct StateSpan {
  std::string name;  // e.g. "step", "layers.0.wq/master", "layers.0.wq/exp_avg.codes"
  std::span<std::byte> bytes;
  Device device;     // where the bytes are: the step counter on the host, the rest on the optimizer's device
};

// What AdamW allocates over a set of shards, in bytes (its constructor lays its buffers out with
// the same arithmetic): `farthing plan` adds these up rather than repeating them.
struct AdamWStateBytes {
  int64_t owned_elems = 0;
  int64_t master = 0;         // f32 (4 B/elem) or remainder16 (2 B/elem) of the owned elements (kMaster)
  int64_t moment_values = 0;  // m and v values or codes, each segment aligned to 64 B (kOptimizerState)
  int64_t absmax = 0;         // m and v block scales of quantized segments, aligned (kOptimizerState)
  int64_t state() const { return moment_values + absmax; }
  // optimizer.offload: host: master and moments are in host memory, with the ring of transfer
  // buffers (HostStepRing::planned_bytes, kCommBuffers on the host); else 0.
  int64_t host_ring = 0;
  // Offloaded: init_master's host copy of one shard's f32 values, and with remainder16 of its bf16
  // weights too, for the largest shard (kOther on the host, only while the first weights are set).
  int64_t host_init_staging = 0;
  bool on_host = false;
  // The step's partial sums, on the weights' device (kOptimizerState) whether or not offloaded.
  int64_t step_sums = 0;
};

class AdamW {
 public:
  // The bytes an AdamW over `shards` with `config` allocates, before building one.
  static AdamWStateBytes planned_bytes(const OptimizerConfig& config, const std::vector<ShardSpec>& shards,
                                       const OffloadOptions& offload = {});
  // The values one inspect and one finish_step pass to the reduce hook (the gradients' sum of
  // squares and non-finite count; those two and the step's four partial sums): what the hook's
  // all-reduce carries.
  static constexpr int64_t kInspectReducedValues = 2, kFinishReducedValues = 6;

  // The state is allocated on `backend`'s device (the CPU when none is given), or in host memory
  // with offload.where kHost.
  AdamW(OptimizerConfig config, std::vector<ShardSpec> shards, Backend* backend = nullptr, OffloadOptions offload = {});

  const OptimizerConfig& config() const { return config_; }
  Backend& backend() const { return backend_; }  // where the weights and gradients live
  Device state_device() const { return state_backend_.device(); }  // where the master and moments live
  bool offloaded() const { return ring_ != nullptr; }
  // Reports each copy and host step of an offloaded step (the step timeline); no-op otherwise.
  void set_offload_observer(OffloadObserver observer);
  const std::vector<ShardSpec>& shards() const;
  int64_t steps_taken() const { return step_; }
  void set_reduce_hook(ReduceHook hook);

  // Sets shard s's master from f32 values or (exactly) from bf16 weights, shard.numel
  // elements, both on the optimizer's device. Required before the first step when the optimizer keeps a master. When
  // `weights` is given, the bf16 working weights are written to match: the round-to-nearest
  // cast for an f32 master, the high half for remainder16 (which needs them with f32 values).
  void init_master(size_t shard, const Tensor& values, const Tensor* weights = nullptr);

  // Global gradient norm and non-finite count over this rank's shards (one reduction, and one
  // read of the sums from the device). grads[s]: f32 or bf16, shard s's numel elements.
  GradReport inspect_grads(std::span<const Tensor> grads, const GradOptions& options = {});

  // One AdamW step on every shard: weights[s] bf16 (updated in place), grads[s] as above.
  // Throws when the report counts non-finite gradients (the caller should have skipped).
  // step_shards + finish_step.
  StepDiagnostics step(std::span<const Tensor> weights, std::span<const Tensor> grads, const GradReport& report,
                       double lr_multiplier = 1.0);

  // The optimizer step fused into backward steps each unit's shard as soon as its gradients are
  // complete: add_grad_sums (the norm and non-finite count, kept on the device), then
  // step_shards with report {} (no clipping, no loss scale).
  void add_grad_sums(std::span<const size_t> shard_ids, std::span<const Tensor> grads);
  // Queues the step of these shards; their partials add to the step's sums on the device.
  void step_shards(std::span<const size_t> shard_ids, std::span<const Tensor> weights, std::span<const Tensor> grads,
                   const GradReport& report, double lr_multiplier = 1.0);
  // Clipping and the non-finite skip with no host wait before the step, where the gradient sums
  // need no reduction over ranks and the state is on the weights' device (no reduce hook, not
  // offloaded): queues add_grad_sums and the step of every shard, the kernels deriving the clip
  // factor from those sums on the device (the host's rule, numerics/grad_clip_rule.h, so the same
  // bits as inspect_grads + step). With non-finite gradients the kernels change nothing, and
  // finish_step reports the count and leaves the step counter where it was.
  bool can_clip_on_device() const { return !reduce_ && !offloaded(); }
  void step_clipped_on_device(std::span<const Tensor> weights, std::span<const Tensor> grads,
                              const GradOptions& options, double lr_multiplier = 1.0);
  // Once per training step, after every step_shards: reads the step's sums (the one host wait),
  // reduces them over ranks through the hook (every rank calls it, possibly with no shard of its
  // own) and advances the step counter (bias corrections, stochastic-rounding keys). With
  // add_grad_sums the diagnostics carry their norm and non-finite count: the fused step has
  // already run on those gradients, so what a non-finite count means is the caller's to say.
  // Offloaded: first waits for every host step handed over (rethrowing a host step's error) and
  // issues the copies back still due; the device's next ops (the next forward, publish_weights)
  // wait for those copies, which until then run beside the device's remaining work.
  StepDiagnostics finish_step();

  // Inspection (tests, tools): shard s's fp32 master (nullptr unless master mode f32), its
  // 16-bit remainders (nullptr unless remainder16), both in the state's memory (state_device()); and
  // its moments dequantized to fp32 into host arrays (shard numel elements each; padding reads 0).
  const float* master(size_t shard) const;
  const uint16_t* master_remainder(size_t shard) const;
  void moments_to_f32(size_t shard, float* m, float* v) const;

  // Every byte of state, in a fixed order: the step counter, then per segment_views() entry
  // the master, m and v (8-bit: codes and absmax separately). Writing into these spans restores it
  // (through the backend where a span's device is not the host).
  std::vector<StateSpan> state_spans();
  // Called by load_optimizer_state after it wrote the spans: the master counts as initialized.
  void on_state_loaded();

  // Each segment (ParamRange ∩ shard) and where its state lives, so that a checkpoint can
  // store the state under the range's name at global positions, whatever the sharding.
  // Element e of the segment is element (global_offset - range.global_offset + e) of its range;
  // for quantized formats, its absmax block is that offset / block size (segments start on
  // block boundaries of the range: ranges and shards both start on 256 multiples).
  // Pointers address the state's memory (state_device()).
  struct SegmentView {
    size_t shard = 0;  // which of this optimizer's shards holds it
    const ParamRange* range = nullptr;
    uint64_t global_offset = 0;
    uint64_t numel = 0;
    StateFormat format = StateFormat::kF32;
    std::byte* master = nullptr;  // f32 (master f32) or uint16 remainders; nullptr with no master
    std::byte* values[2] = {nullptr, nullptr};  // m, v: f32, bf16 bits, 8-bit codes or 4-bit pairs
    size_t value_bytes = 0;
    float* absmax[2] = {nullptr, nullptr};  // quantized formats only
    size_t absmax_count = 0;
  };
  std::vector<SegmentView> segment_views();
  // Restores the step counter (the bias corrections and stochastic-rounding keys depend on it).
  void set_steps_taken(int64_t steps) { step_ = steps; }
  // Bytes of master + moments this optimizer allocated.
  int64_t state_bytes() const;

 private:
  struct Segment {
    size_t range = 0;
    StateFormat format = StateFormat::kF32;
    uint64_t global_offset = 0;
    uint64_t local_offset = 0;  // within the shard
    uint64_t numel = 0;
    size_t values_offset_bytes = 0;  // in the shard's m and v buffers (same layout)
    size_t absmax_offset_bytes = 0;  // kBlock8 only
  };
  // A shard's segments and the bytes of each of its m and v buffers (values, then absmax, per
  // segment, each 64-byte aligned).
  struct ShardLayout {
    std::vector<Segment> segments;
    size_t moment_value_bytes = 0, absmax_bytes = 0;
    size_t state_bytes() const { return moment_value_bytes + absmax_bytes; }
  };
  static ShardLayout lay_out_shard(const OptimizerConfig& config, const ShardSpec& spec);
  struct ShardState {
    ShardSpec spec;
    Buffer master;
    Buffer m, v;
    std::vector<Segment> segments;
    bool master_initialized = false;
  };
  kernels::MomentRef moment_ref(const ShardState& shard, const Segment& seg, bool second) const;
  // init_master with values and weights in the state's memory.
  void init_master_in_state_memory(size_t s, const Tensor& values, const Tensor* weights);
  void init_remainder16(ShardState& shard, const Tensor& values, const Tensor& weights);
  // Steps every segment of `shard` through `backend` over weights and gradients it can address,
  // adding each segment's partials to *sums (that backend's memory) in segment order.
  // clip_on_device: the kernels scale by the clip rule over the step's gradient sums instead.
  void step_segments(Backend& backend, ShardState& shard, uint16_t* weights, const Tensor& grads, int64_t t,
                     const GradReport& report, double lr_multiplier, kernels::AdamWPartials* sums,
                     const GradOptions* clip_on_device = nullptr) const;
  // The step's sums as the host reads them, zeroed where they are kept.
  struct StepSums {
    kernels::GradPartials grads;
    kernels::AdamWPartials step;
  };
  StepSums take_step_sums();
  std::vector<size_t> all_shard_ids() const;
  void check_shard_tensors(std::span<const Tensor> tensors, const char* what, bool weights) const;

  OptimizerConfig config_;
  Backend& backend_;        // the weights' and gradients' device
  Backend& state_backend_;  // the master's and moments': backend_, or the host's when offloaded
  std::vector<ShardSpec> specs_;
  std::vector<ShardState> shards_;
  int64_t step_ = 0;
  ReduceHook reduce_;
  // A StepSums on backend_'s device, where the kernels add to it; offloaded steps add theirs to
  // host_step_sums_ (their kernels run on the host, on the ring's worker thread).
  Buffer sums_;
  kernels::AdamWPartials host_step_sums_;
  // What this step's step_shards calls were given, for finish_step's diagnostics.
  GradReport step_report_;
  double step_lr_multiplier_ = 1.0;
  bool grad_sums_added_ = false, step_pending_ = false;
  std::optional<GradOptions> clipped_on_device_;  // this step's, when step_clipped_on_device
  // Offloaded only. Last: destroyed first, so its worker's host steps, which use the shards'
  // state and host_step_sums_, are over before those go.
  std::unique_ptr<HostStepRing> ring_;
};

}  // namespace farthing::optim

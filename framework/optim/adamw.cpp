// adamw.cpp — see adamw.h.
#include "framework/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/dynamic_map.h"
#include "kernels/numerics/master_remainder.h"

namespace farthing::optim {

namespace {

constexpr size_t kAlignBytes = 64;

size_t align_up(size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

size_t moment_value_bytes(StateFormat format, uint64_t numel) {
  switch (format) {
    case StateFormat::kF32: return size_t(numel) * 4;
    case StateFormat::kBf16: return size_t(numel) * 2;
    case StateFormat::kBlock8: return size_t(numel);
    case StateFormat::kBlock4: return size_t((numel + 1) / 2);
  }
  return 0;
}

// Number of absmax values of a quantized segment.
size_t blocks_of(StateFormat format, uint64_t numel) {
  const uint64_t block = format == StateFormat::kBlock4 ? uint64_t(numerics::kQuant4BlockElems) : kQuantBlockElems;
  return size_t((numel + block - 1) / block);
}

size_t master_bytes_per_elem(MasterMode mode) {
  return mode == MasterMode::kF32 ? sizeof(float) : mode == MasterMode::kRemainder16 ? sizeof(uint16_t) : 0;
}

kernels::GradFormat grad_format_of(const Tensor& t) {
  return t.dtype() == DType::kBF16 ? kernels::GradFormat::kBf16 : kernels::GradFormat::kF32;
}

const std::byte* byte_ptr(const Tensor& t, uint64_t element) {
  return static_cast<const std::byte*>(t.data()) + element * dtype_size_bytes(t.dtype());
}

}  // namespace

AdamW::ShardLayout AdamW::lay_out_shard(const OptimizerConfig& config, const ShardSpec& spec) {
  ShardLayout layout;
  const uint64_t shard_begin = spec.global_offset, shard_end = shard_begin + spec.numel;
  size_t offset = 0;
  for (size_t r = 0; r < config.ranges.size(); ++r) {
    const ParamRange& range = config.ranges[r];
    const uint64_t begin = std::max(shard_begin, range.global_offset);
    const uint64_t end = std::min(shard_end, range.global_offset + range.numel);
    if (begin >= end) continue;
    Segment seg;
    seg.range = r;
    seg.format = effective_state_format(config, range);
    seg.global_offset = begin;
    seg.local_offset = begin - shard_begin;
    seg.numel = end - begin;
    seg.values_offset_bytes = offset;
    const size_t values = align_up(moment_value_bytes(seg.format, seg.numel));
    offset += values;
    layout.moment_value_bytes += values;
    if (is_quantized(seg.format)) {
      seg.absmax_offset_bytes = offset;
      const size_t absmax = align_up(blocks_of(seg.format, seg.numel) * sizeof(float));
      offset += absmax;
      layout.absmax_bytes += absmax;
    }
    layout.segments.push_back(seg);
  }
  return layout;
}

AdamWStateBytes AdamW::planned_bytes(const OptimizerConfig& config, const std::vector<ShardSpec>& shards,
                                     const OffloadOptions& offload) {
  AdamWStateBytes b;
  b.on_host = offload.where == Offload::kHost;
  b.host_ring = HostStepRing::planned_bytes(offload, shards);
  if (b.on_host && config.master_mode != MasterMode::kNone) {  // init_master's staging, below
    uint64_t largest = 0;
    for (const ShardSpec& spec : shards) largest = std::max(largest, spec.numel);
    const int64_t weights = config.master_mode == MasterMode::kRemainder16 ? 2 : 0;
    b.host_init_staging = int64_t(largest) * (4 + weights);
  }
  b.step_sums = int64_t(sizeof(StepSums));
  for (const ShardSpec& spec : shards) {
    const ShardLayout layout = lay_out_shard(config, spec);
    b.owned_elems += int64_t(spec.numel);
    b.master += int64_t(spec.numel) * int64_t(master_bytes_per_elem(config.master_mode));
    b.moment_values += 2 * int64_t(layout.moment_value_bytes);  // m and v
    b.absmax += 2 * int64_t(layout.absmax_bytes);
  }
  return b;
}

AdamW::AdamW(OptimizerConfig config, std::vector<ShardSpec> shards, Backend* backend, OffloadOptions offload)
    : config_(std::move(config)),
      backend_(backend != nullptr ? *backend : backend_for(Device::cpu())),
      state_backend_(offload.where == Offload::kHost ? backend_for(Device::cpu()) : backend_),
      specs_(std::move(shards)) {
  validate_optimizer_config(config_, specs_);
  FARTHING_CHECK(!specs_.empty(), "the optimizer owns no shard; give at least one (global_offset, numel)");
  if (offload.where == Offload::kHost) ring_ = std::make_unique<HostStepRing>(backend_, offload, specs_);
  sums_ = Buffer(backend_.device(), sizeof(StepSums), MemoryCategory::kOptimizerState);
  backend_.fill_bytes(sums_.data(), 0, sums_.bytes());  // all-zero bytes: 0.0 and 0
  const Device device = state_backend_.device();
  shards_.resize(specs_.size());
  for (size_t s = 0; s < specs_.size(); ++s) {
    ShardState& shard = shards_[s];
    shard.spec = specs_[s];
    ShardLayout layout = lay_out_shard(config_, shard.spec);
    shard.segments = std::move(layout.segments);
    const size_t state_bytes = layout.state_bytes();
    if (config_.master_mode != MasterMode::kNone) {
      shard.master = Buffer(device, size_t(shard.spec.numel) * master_bytes_per_elem(config_.master_mode),
                            MemoryCategory::kMaster);
      state_backend_.fill_bytes(shard.master.data(), 0, shard.master.bytes());
    }
    shard.m = Buffer(device, state_bytes, MemoryCategory::kOptimizerState);
    shard.v = Buffer(device, state_bytes, MemoryCategory::kOptimizerState);
    // Zero moments: 0.0f / bf16 0 are all-zero bytes; 8-bit zero is the map's zero code with
    // absmax 0 (the whole buffer is cleared first so alignment padding is deterministic too).
    for (Buffer* b : {&shard.m, &shard.v}) state_backend_.fill_bytes(b->data(), 0, b->bytes());
    for (const Segment& seg : shard.segments) {
      auto* m_codes = static_cast<uint8_t*>(shard.m.data()) + seg.values_offset_bytes;
      if (seg.format == StateFormat::kBlock8) {
        state_backend_.fill_bytes(m_codes, numerics::kSignedMapZeroCode, size_t(seg.numel));
      }
      if (seg.format == StateFormat::kBlock4) {  // code 7 is the signed 4-bit map's zero; an odd tail's high nibble is 0
        state_backend_.fill_bytes(m_codes, 0x77, moment_value_bytes(seg.format, seg.numel));
        if (seg.numel & 1) state_backend_.fill_bytes(m_codes + seg.numel / 2, 0x07, 1);
      }
    }
  }
}

const std::vector<ShardSpec>& AdamW::shards() const { return specs_; }

void AdamW::set_reduce_hook(ReduceHook hook) { reduce_ = std::move(hook); }

void AdamW::set_offload_observer(OffloadObserver observer) {
  if (ring_) ring_->set_observer(std::move(observer));
}

void AdamW::init_master(size_t s, const Tensor& values, const Tensor* weights) {
  if (!offloaded()) return init_master_in_state_memory(s, values, weights);
  // Offloaded: the values and weights come to the host, the master is set there, and the
  // weights it wrote go back (start-up only: one shard at a time; planned_bytes' host_init_staging
  // for f32 values, and the weights remainder16 needs).
  FARTHING_CHECK(values.device() == backend_.device() && values.is_contiguous(), "init_master: values must be a "
                 "contiguous ", backend_.device().name(), " tensor, got ", values.describe());
  Buffer host_values(Device::cpu(), values.nbytes(), MemoryCategory::kOther);
  const Tensor values_on_host = host_values.view(values.dtype(), values.shape());
  backend_.copy(values_on_host, values);
  if (weights == nullptr) return init_master_in_state_memory(s, values_on_host, nullptr);
  FARTHING_CHECK(weights->device() == backend_.device() && weights->is_contiguous(), "init_master: weights must be a "
                 "contiguous ", backend_.device().name(), " tensor, got ", weights->describe());
  Buffer host_weights(Device::cpu(), weights->nbytes(), MemoryCategory::kOther);
  const Tensor weights_on_host = host_weights.view(weights->dtype(), weights->shape());
  backend_.copy(weights_on_host, *weights);
  init_master_in_state_memory(s, values_on_host, &weights_on_host);
  backend_.copy(*weights, weights_on_host);
}

void AdamW::init_master_in_state_memory(size_t s, const Tensor& values, const Tensor* weights) {
  FARTHING_CHECK(s < shards_.size(), "init_master: shard ", s, " does not exist (", shards_.size(), " shards)");
  FARTHING_CHECK(config_.master_mode != MasterMode::kNone,
                 "init_master: this optimizer keeps no master (master mode 'none'); nothing to initialize");
  ShardState& shard = shards_[s];
  const Device device = state_backend_.device();
  FARTHING_CHECK(values.device() == device && values.is_contiguous(), "init_master: values must be a contiguous ",
                 device.name(), " tensor, got ", values.describe());
  FARTHING_CHECK(uint64_t(values.numel()) == shard.spec.numel, "init_master: shard ", s, " has ",
                 shard.spec.numel, " elements but the values hold ", values.numel());
  FARTHING_CHECK(values.dtype() == DType::kF32 || values.dtype() == DType::kBF16,
                 "init_master: values must be f32 or bf16, got ", values.describe());
  if (weights) {
    FARTHING_CHECK(weights->device() == device && weights->is_contiguous() && weights->dtype() == DType::kBF16 &&
                       weights->numel() == values.numel(),
                   "init_master: weights must be contiguous ", device.name(), " bf16 of ", values.numel(),
                   " elements, got ", weights->describe());
  }
  const bool same_memory = weights && weights->data() == values.data();
  if (config_.master_mode == MasterMode::kRemainder16) {
    if (values.dtype() == DType::kBF16) {  // the weights are the master: remainder 0
      state_backend_.fill_bytes(shard.master.data(), 0, shard.master.bytes());
      if (weights && !same_memory) state_backend_.copy(*weights, values);
    } else {
      FARTHING_CHECK(weights != nullptr, "init_master: master mode 'remainder16' keeps the master's high half in the "
                     "bf16 weights; pass the weights tensor so they can be written along with the remainders");
      init_remainder16(shard, values, *weights);
    }
    shard.master_initialized = true;
    return;
  }
  // The master holds the values exactly (bf16 widens exactly); the weights their nearest bf16.
  const Tensor master = shard.master.view(DType::kF32, Shape{values.numel()});
  if (values.dtype() == DType::kF32) {
    state_backend_.copy(master, values);
  } else {
    state_backend_.cast(master, values, CastOptions{});
  }
  if (weights && !same_memory) state_backend_.cast(*weights, master, CastOptions{});
  shard.master_initialized = true;
}

// The f32 values split into the bf16 weights (ties away from zero) and 16-bit remainders. No
// backend op does this split (it runs once, at the start): on another device the values go
// through host memory, a piece at a time.
void AdamW::init_remainder16(ShardState& shard, const Tensor& values, const Tensor& weights) {
  const int64_t n = values.numel();
  const bool host = state_backend_.device().is_cpu();
  constexpr int64_t kPiece = int64_t(1) << 20;
  Buffer staged_values, staged_weights, staged_remainder;
  if (!host) {
    const size_t piece = size_t(std::min(n, kPiece));
    staged_values = Buffer(Device::cpu(), piece * 4, MemoryCategory::kOther);
    staged_weights = Buffer(Device::cpu(), piece * 2, MemoryCategory::kOther);
    staged_remainder = Buffer(Device::cpu(), piece * 2, MemoryCategory::kOther);
  }
  auto* remainder = static_cast<uint16_t*>(shard.master.data());
  for (int64_t begin = 0; begin < n; begin += host ? n : kPiece) {
    const int64_t count = host ? n : std::min(kPiece, n - begin);
    const float* src = static_cast<const float*>(values.data()) + begin;
    uint16_t* w = static_cast<uint16_t*>(weights.data()) + begin;
    uint16_t* r = remainder + begin;
    const Device device = state_backend_.device();
    if (!host) {
      state_backend_.copy(staged_values.view(DType::kF32, Shape{count}),
                    Tensor(const_cast<float*>(src), DType::kF32, Shape{count}, device));
      src = static_cast<const float*>(staged_values.data());
      w = static_cast<uint16_t*>(staged_weights.data());
      r = static_cast<uint16_t*>(staged_remainder.data());
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const numerics::MasterSplit split = numerics::master_split(src[i]);
      w[i] = split.weight;
      r[i] = split.remainder;
    }
    if (!host) {
      state_backend_.copy(Tensor(static_cast<uint16_t*>(weights.data()) + begin, DType::kBF16, Shape{count}, device),
                    staged_weights.view(DType::kBF16, Shape{count}));
      state_backend_.copy(Tensor(remainder + begin, DType::kBF16, Shape{count}, device),
                    staged_remainder.view(DType::kBF16, Shape{count}));
    }
  }
}

void AdamW::check_shard_tensors(std::span<const Tensor> tensors, const char* what, bool weights) const {
  FARTHING_CHECK(tensors.size() == shards_.size(), what, ": got ", tensors.size(), " tensors for ",
                 shards_.size(), " shards; pass one per shard, in shard order");
  for (size_t s = 0; s < tensors.size(); ++s) {
    const Tensor& t = tensors[s];
    FARTHING_CHECK(t.device() == backend_.device() && t.is_contiguous(), what, "[", s, "] must be a contiguous ",
                   backend_.device().name(), " tensor (the optimizer's device), got ", t.describe());
    FARTHING_CHECK(uint64_t(t.numel()) == shards_[s].spec.numel, what, "[", s, "] has ", t.numel(),
                   " elements but shard ", s, " has ", shards_[s].spec.numel);
    if (weights) {
      FARTHING_CHECK(t.dtype() == DType::kBF16, what, "[", s, "] must be bf16 working weights, got ", t.describe());
    } else {
      FARTHING_CHECK(t.dtype() == DType::kF32 || t.dtype() == DType::kBF16, what, "[", s,
                     "] must be f32 or bf16 gradients, got ", t.describe());
    }
  }
}

kernels::MomentRef AdamW::moment_ref(const ShardState& shard, const Segment& seg, bool second) const {
  std::byte* base = static_cast<std::byte*>(second ? shard.v.data() : shard.m.data());
  kernels::MomentRef ref;
  ref.format = seg.format;
  ref.values = base + seg.values_offset_bytes;
  ref.absmax = is_quantized(seg.format) ? reinterpret_cast<float*>(base + seg.absmax_offset_bytes) : nullptr;
  return ref;
}

GradReport AdamW::inspect_grads(std::span<const Tensor> grads, const GradOptions& options) {
  check_shard_tensors(grads, "inspect_grads: grads", false);
  check_grad_options(options);
  FARTHING_CHECK(!step_pending_ && !grad_sums_added_, "inspect_grads: called between step_shards or add_grad_sums "
                 "and finish_step; inspect the gradients before the step");
  add_grad_sums(all_shard_ids(), grads);
  grad_sums_added_ = false;  // read here, not in finish_step
  const StepSums sums = take_step_sums();
  double partial[kInspectReducedValues] = {sums.grads.sum_squares, double(sums.grads.nonfinite)};
  if (reduce_) reduce_(std::span<double>(partial, kInspectReducedValues));
  return make_grad_report(partial[0], int64_t(partial[1]), options);
}

std::vector<size_t> AdamW::all_shard_ids() const {
  std::vector<size_t> ids(shards_.size());
  for (size_t s = 0; s < ids.size(); ++s) ids[s] = s;
  return ids;
}

void AdamW::add_grad_sums(std::span<const size_t> shard_ids, std::span<const Tensor> grads) {
  FARTHING_CHECK(shard_ids.size() == grads.size(), "add_grad_sums: ", shard_ids.size(), " shard ids but ",
                 grads.size(), " gradient tensors");
  auto* sums = static_cast<StepSums*>(sums_.data());
  for (size_t i = 0; i < shard_ids.size(); ++i) {
    const size_t s = shard_ids[i];
    FARTHING_CHECK(s < shards_.size() && uint64_t(grads[i].numel()) == shards_[s].spec.numel,
                   "add_grad_sums: shard ", s, " does not exist or its gradient has ", grads[i].numel(), " elements");
    for (const Segment& seg : shards_[s].segments) {
      backend_.grad_partials(byte_ptr(grads[i], seg.local_offset), grad_format_of(grads[i]), size_t(seg.numel),
                             &sums->grads);
    }
  }
  grad_sums_added_ = true;
}

AdamW::StepSums AdamW::take_step_sums() {
  StepSums sums;
  backend_.copy(Tensor(&sums, DType::kU8, Shape{int64_t(sizeof sums)}),
                sums_.view(DType::kU8, Shape{int64_t(sizeof sums)}));
  backend_.fill_bytes(sums_.data(), 0, sums_.bytes());
  kernels::add_partials(sums.step, host_step_sums_);  // offloaded steps' (zero otherwise)
  host_step_sums_ = kernels::AdamWPartials{};
  return sums;
}

StepDiagnostics AdamW::step(std::span<const Tensor> weights, std::span<const Tensor> grads, const GradReport& report,
                            double lr_multiplier) {
  check_shard_tensors(weights, "step: weights", true);
  check_shard_tensors(grads, "step: grads", false);
  step_shards(all_shard_ids(), weights, grads, report, lr_multiplier);
  return finish_step();
}

void AdamW::step_shards(std::span<const size_t> shard_ids, std::span<const Tensor> weights,
                        std::span<const Tensor> grads, const GradReport& report, double lr_multiplier) {
  FARTHING_CHECK(shard_ids.size() == weights.size() && shard_ids.size() == grads.size(), "step_shards: ",
                 shard_ids.size(), " shard ids, ", weights.size(), " weight and ", grads.size(), " gradient tensors");
  FARTHING_CHECK(report.nonfinite == 0, "step: the gradients hold ", report.nonfinite,
                 " non-finite values; the optimizer will not step on them (it would poison the moments). "
                 "Skip this step (and lower the loss scale) or stop: that policy is the caller's");
  FARTHING_CHECK(std::isfinite(report.grad_scale) && report.grad_scale > 0.0, "step: grad_scale (",
                 report.grad_scale, ") must be finite and > 0; build the report with inspect_grads");
  FARTHING_CHECK(std::isfinite(lr_multiplier) && lr_multiplier >= 0.0, "step: lr_multiplier (", lr_multiplier,
                 ") must be finite and >= 0");
  step_report_ = report;
  step_lr_multiplier_ = lr_multiplier;
  step_pending_ = true;
  const int64_t t = step_ + 1;
  for (size_t i = 0; i < shard_ids.size(); ++i) {
    const size_t s = shard_ids[i];
    FARTHING_CHECK(s < shards_.size(), "step_shards: shard ", s, " does not exist (", shards_.size(), " shards)");
    const ShardState& shard = shards_[s];
    FARTHING_CHECK(uint64_t(weights[i].numel()) == shard.spec.numel && uint64_t(grads[i].numel()) == shard.spec.numel &&
                       weights[i].dtype() == DType::kBF16,
                   "step_shards: shard ", s, " has ", shard.spec.numel, " elements; got weights ",
                   weights[i].describe(), " and grads ", grads[i].describe());
    FARTHING_CHECK(config_.master_mode == MasterMode::kNone || shard.master_initialized, "step: shard ", s,
                   "'s fp32 master was never initialized; call init_master(", s,
                   ", weights or fp32 values) before the first step");
  }
  if (!offloaded()) {
    auto* sums = static_cast<StepSums*>(sums_.data());
    for (size_t i = 0; i < shard_ids.size(); ++i) {
      step_segments(backend_, shards_[shard_ids[i]], static_cast<uint16_t*>(weights[i].data()), grads[i], t, report,
                    lr_multiplier, &sums->step, clipped_on_device_ ? &*clipped_on_device_ : nullptr);
    }
  } else {
    // Each shard's host step runs on the ring's worker while this thread goes on (to the next
    // units' backward, when fused). The worker runs them one at a time in hand-over order, and
    // host_step_sums_ is the worker's alone until finish_step has waited for it: the partials are
    // added in the order the device's kernels would add them.
    for (size_t i = 0; i < shard_ids.size(); ++i) {
      ShardState& shard = shards_[shard_ids[i]];
      ring_->step(shard_ids[i], grads[i], weights[i],
                  [this, &shard, t, report, lr_multiplier](const Tensor& host_grads, const Tensor& host_weights) {
                    step_segments(state_backend_, shard, static_cast<uint16_t*>(host_weights.data()), host_grads, t,
                                  report, lr_multiplier, &host_step_sums_);
                  });
    }
  }
}

void AdamW::step_clipped_on_device(std::span<const Tensor> weights, std::span<const Tensor> grads,
                                   const GradOptions& options, double lr_multiplier) {
  FARTHING_CHECK(can_clip_on_device(), "step_clipped_on_device: the gradient sums need a reduction over ranks or "
                 "the state is offloaded; use inspect_grads and step");
  check_shard_tensors(weights, "step: weights", true);
  check_shard_tensors(grads, "step: grads", false);
  check_grad_options(options);
  const std::vector<size_t> ids = all_shard_ids();
  add_grad_sums(ids, grads);
  clipped_on_device_ = options;
  step_shards(ids, weights, grads, GradReport{}, lr_multiplier);
}

void AdamW::step_segments(Backend& backend, ShardState& shard, uint16_t* weights, const Tensor& grads, int64_t t,
                          const GradReport& report, double lr_multiplier, kernels::AdamWPartials* sums,
                          const GradOptions* clip_on_device) const {
  for (const Segment& seg : shard.segments) {
    const ParamGroup& group = config_.groups[size_t(config_.ranges[seg.range].group)];
    const AdamWHyper& h = group.hyper;
    kernels::AdamWSegment args;
    args.n = size_t(seg.numel);
    args.global_offset = seg.global_offset;
    args.grad = byte_ptr(grads, seg.local_offset);
    args.grad_format = grad_format_of(grads);
    args.weight = weights + seg.local_offset;
    args.master = config_.master_mode == MasterMode::kF32 ? static_cast<float*>(shard.master.data()) + seg.local_offset
                                                          : nullptr;
    args.remainder = config_.master_mode == MasterMode::kRemainder16
                         ? static_cast<uint16_t*>(shard.master.data()) + seg.local_offset
                         : nullptr;
    args.master_mode = config_.master_mode;
    args.weight_rounding = config_.weight_rounding;
    args.m = moment_ref(shard, seg, false);
    args.v = moment_ref(shard, seg, true);
    args.scalars = numerics::make_adamw_scalars(h.lr * lr_multiplier, h.beta1, h.beta2, h.eps, h.weight_decay, t,
                                                report.grad_scale);
    args.seed = config_.seed;
    args.step = uint32_t(t);
    if (clip_on_device != nullptr) {
      args.clip_sums = &static_cast<const StepSums*>(sums_.data())->grads;
      args.max_grad_norm = clip_on_device->max_grad_norm;
      args.loss_scale = clip_on_device->loss_scale;
    }
    backend.adamw_step(args, sums);
  }
}

StepDiagnostics AdamW::finish_step() {
  if (ring_) ring_->finish_step();  // every host step done, its weights' copy back issued
  const StepSums sums = take_step_sums();
  double partial[kFinishReducedValues] = {sums.grads.sum_squares,       double(sums.grads.nonfinite),
                                          double(sums.step.elements),    double(sums.step.weights_unchanged),
                                          sums.step.update_sum_squares, sums.step.weight_sum_squares};
  if (reduce_) reduce_(std::span<double>(partial, kFinishReducedValues));
  StepDiagnostics d;
  d.lr = config_.groups[0].hyper.lr * step_lr_multiplier_;
  if (grad_sums_added_) {  // fused, or clipped on the device: the norm was summed beside the step
    const GradReport added = make_grad_report(partial[0], int64_t(partial[1]), clipped_on_device_.value_or(GradOptions{}));
    d.grad_norm = added.grad_norm;
    d.clip_factor = added.clip_factor;
    d.nonfinite_grads = added.nonfinite;
  } else {
    d.grad_norm = step_report_.grad_norm;
    d.clip_factor = step_report_.clip_factor;
    d.nonfinite_grads = step_report_.nonfinite;
  }
  d.elements = int64_t(partial[2]);
  d.weights_unchanged = int64_t(partial[3]);
  d.unchanged_fraction = partial[2] > 0.0 ? partial[3] / partial[2] : 0.0;
  d.update_rms_ratio = partial[5] > 0.0 ? std::sqrt(partial[4] / partial[5]) : 0.0;
  // A step the kernels skipped (non-finite gradients, clipped on the device) leaves the counter.
  if (!(clipped_on_device_ && d.nonfinite_grads > 0)) ++step_;
  d.step = step_;
  clipped_on_device_.reset();
  grad_sums_added_ = step_pending_ = false;
  step_report_ = GradReport{};
  step_lr_multiplier_ = 1.0;
  return d;
}

const float* AdamW::master(size_t s) const {
  FARTHING_CHECK(s < shards_.size(), "master: shard ", s, " does not exist (", shards_.size(), " shards)");
  return config_.master_mode == MasterMode::kF32 ? static_cast<const float*>(shards_[s].master.data()) : nullptr;
}

void AdamW::moments_to_f32(size_t s, float* m, float* v) const {
  FARTHING_CHECK(s < shards_.size(), "moments_to_f32: shard ", s, " does not exist (", shards_.size(), " shards)");
  const ShardState& shard = shards_[s];
  std::fill(m, m + shard.spec.numel, 0.0f);
  std::fill(v, v + shard.spec.numel, 0.0f);
  // Inspection only: on another device the moments are copied to the host first.
  Buffer host_m, host_v;
  const Buffer* bm = &shard.m;
  const Buffer* bv = &shard.v;
  if (!state_backend_.device().is_cpu()) {
    const int64_t bytes = int64_t(shard.m.bytes());
    host_m = Buffer(Device::cpu(), size_t(bytes), MemoryCategory::kOther);
    host_v = Buffer(Device::cpu(), size_t(bytes), MemoryCategory::kOther);
    state_backend_.copy(host_m.view(DType::kU8, Shape{bytes}), shard.m.view(DType::kU8, Shape{bytes}));
    state_backend_.copy(host_v.view(DType::kU8, Shape{bytes}), shard.v.view(DType::kU8, Shape{bytes}));
    bm = &host_m;
    bv = &host_v;
  }
  for (const Segment& seg : shard.segments) {
    kernels::MomentRef mr = moment_ref(shard, seg, false), vr = moment_ref(shard, seg, true);
    auto rebase = [](kernels::MomentRef& r, const Buffer& from, const Buffer& to) {
      const auto shift = [&](const void* p) {
        return static_cast<std::byte*>(to.data()) + (static_cast<const std::byte*>(p) - static_cast<const std::byte*>(from.data()));
      };
      r.values = shift(r.values);
      if (r.absmax) r.absmax = reinterpret_cast<float*>(shift(r.absmax));
    };
    rebase(mr, shard.m, *bm);
    rebase(vr, shard.v, *bv);
    moment_to_f32_on_host(mr, numerics::MapSign::kSigned, m + seg.local_offset, size_t(seg.numel));
    moment_to_f32_on_host(vr, numerics::MapSign::kUnsigned, v + seg.local_offset, size_t(seg.numel));
  }
}

// The same bytes as segment_views() describes, named and in its order.
std::vector<StateSpan> AdamW::state_spans() {
  std::vector<StateSpan> spans;
  spans.push_back({"step", std::as_writable_bytes(std::span<int64_t>(&step_, 1)), Device::cpu()});
  const Device device = state_backend_.device();
  for (const SegmentView& v : segment_views()) {
    const std::string name =
        "shard" + std::to_string(v.shard) + "/" + v.range->name + "@" + std::to_string(v.global_offset);
    if (config_.master_mode == MasterMode::kF32) {
      spans.push_back({name + "/master", {v.master, size_t(v.numel) * sizeof(float)}, device});
    } else if (config_.master_mode == MasterMode::kRemainder16) {
      spans.push_back({name + "/master_remainder", {v.master, size_t(v.numel) * sizeof(uint16_t)}, device});
    }
    const bool quantized = is_quantized(v.format);
    for (int k = 0; k < 2; ++k) {
      const std::string moment = name + (k == 0 ? "/exp_avg" : "/exp_avg_sq");
      spans.push_back({moment + (quantized ? ".codes" : ""), {v.values[k], v.value_bytes}, device});
      if (quantized) {
        spans.push_back({moment + ".absmax", {reinterpret_cast<std::byte*>(v.absmax[k]), v.absmax_count * sizeof(float)},
                         device});
      }
    }
  }
  return spans;
}

std::vector<AdamW::SegmentView> AdamW::segment_views() {
  std::vector<SegmentView> views;
  for (size_t s = 0; s < shards_.size(); ++s) {
    ShardState& shard = shards_[s];
    for (const Segment& seg : shard.segments) {
      SegmentView v;
      v.shard = s;
      v.range = &config_.ranges[seg.range];
      v.global_offset = seg.global_offset;
      v.numel = seg.numel;
      v.format = seg.format;
      if (config_.master_mode != MasterMode::kNone) {
        const size_t bytes_per = config_.master_mode == MasterMode::kF32 ? sizeof(float) : sizeof(uint16_t);
        v.master = static_cast<std::byte*>(shard.master.data()) + seg.local_offset * bytes_per;
      }
      v.value_bytes = moment_value_bytes(seg.format, seg.numel);
      for (int k = 0; k < 2; ++k) {
        std::byte* base = static_cast<std::byte*>((k == 0 ? shard.m : shard.v).data());
        v.values[k] = base + seg.values_offset_bytes;
        if (is_quantized(seg.format)) v.absmax[k] = reinterpret_cast<float*>(base + seg.absmax_offset_bytes);
      }
      if (is_quantized(seg.format)) v.absmax_count = blocks_of(seg.format, seg.numel);
      views.push_back(v);
    }
  }
  return views;
}

void AdamW::on_state_loaded() {
  for (ShardState& shard : shards_) shard.master_initialized = true;
}

const uint16_t* AdamW::master_remainder(size_t s) const {
  FARTHING_CHECK(s < shards_.size(), "master_remainder: shard ", s, " does not exist (", shards_.size(), " shards)");
  return config_.master_mode == MasterMode::kRemainder16 ? static_cast<const uint16_t*>(shards_[s].master.data())
                                                          : nullptr;
}

int64_t AdamW::state_bytes() const {
  int64_t total = 0;
  for (const ShardState& shard : shards_) total += int64_t(shard.master.bytes() + shard.m.bytes() + shard.v.bytes());
  return total;
}

}  // namespace farthing::optim

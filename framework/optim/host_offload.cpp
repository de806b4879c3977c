// host_offload.cpp — see host_offload.h.
#include "framework/optim/host_offload.h"

#include <algorithm>
#include <chrono>

#include "framework/core/error.h"

namespace farthing::optim {

namespace {

constexpr size_t kAlignBytes = 64;

uint64_t largest_shard(const std::vector<ShardSpec>& shards) {
  uint64_t n = 0;
  for (const ShardSpec& s : shards) n = std::max(n, s.numel);
  return n;
}

// A slot: the gradients (in the dtype the steps hand over), then the bf16 weights, each 64-byte aligned.
size_t weights_offset_of(uint64_t numel, DType grad_dtype) {
  return (size_t(numel) * dtype_size_bytes(grad_dtype) + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
}
size_t slot_bytes_of(uint64_t numel, DType grad_dtype) { return weights_offset_of(numel, grad_dtype) + size_t(numel) * 2; }

}  // namespace

int64_t HostStepRing::planned_bytes(const OffloadOptions& options, const std::vector<ShardSpec>& shards) {
  if (options.where != Offload::kHost) return 0;
  return options.ring_units * int64_t(slot_bytes_of(largest_shard(shards), options.grad_dtype));
}

HostStepRing::HostStepRing(Backend& device, const OffloadOptions& options, const std::vector<ShardSpec>& shards)
    : transfer_(make_host_transfer(device)) {
  FARTHING_CHECK(options.ring_units >= 1, "optimizer offload: the ring needs at least one unit's buffers, got ",
                 options.ring_units);
  FARTHING_CHECK(options.grad_dtype == DType::kF32 || options.grad_dtype == DType::kBF16,
                 "optimizer offload: gradients are handed over as f32 or bf16, not ", dtype_name(options.grad_dtype));
  const uint64_t numel = largest_shard(shards);
  grad_dtype_ = options.grad_dtype;
  slot_bytes_ = slot_bytes_of(numel, grad_dtype_);
  weights_offset_ = weights_offset_of(numel, grad_dtype_);
  slots_.resize(size_t(options.ring_units));
  for (Slot& slot : slots_) slot.memory = transfer_->allocate_host(slot_bytes_, MemoryCategory::kCommBuffers);
}

HostStepRing::~HostStepRing() {
  for (Slot& slot : slots_) transfer_->free_host(slot.memory, slot_bytes_, MemoryCategory::kCommBuffers);
}

double HostStepRing::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t HostStepRing::copy_out(size_t shard, const Tensor& grads, const Tensor& weights) {
  FARTHING_CHECK(grads.nbytes() <= weights_offset_ && weights.nbytes() <= slot_bytes_ - weights_offset_,
                 "optimizer offload: shard ", shard, "'s gradients ", grads.describe(), " or weights ",
                 weights.describe(), " do not fit the ring's slots, sized for the largest shard's ", dtype_name(grad_dtype_),
                 " gradients (OffloadOptions::grad_dtype: the parameter store's kept dtype)");
  const size_t s = next_;
  next_ = (next_ + 1) % slots_.size();
  Slot& slot = slots_[s];
  // NOTE: the slot's previous copy in was issued before this copy out, on the same ordered queue,
  // so it has read the slot before this overwrites it.
  slot.shard = shard;
  slot.grads = grads;
  slot.weights = weights;
  slot.issued = now();
  transfer_->to_host(slot.memory, grads);
  slot.out = transfer_->to_host(static_cast<std::byte*>(slot.memory) + weights_offset_, weights);
  slot.waited = false;
  return s;
}

Tensor HostStepRing::host_grads(size_t s) {
  Slot& slot = slots_.at(s);
  if (!slot.waited) {
    transfer_->wait(slot.out);
    slot.waited = true;
    record(OffloadStage::kCopyOut, slot.shard, slot.issued, now());
  }
  return Tensor(slot.memory, slot.grads.dtype(), slot.grads.shape(), Device::cpu());
}

Tensor HostStepRing::host_weights(size_t s) {
  host_grads(s);  // the weights' copy was issued after the gradients'
  const Slot& slot = slots_.at(s);
  return Tensor(static_cast<std::byte*>(slot.memory) + weights_offset_, slot.weights.dtype(), slot.weights.shape(),
                Device::cpu());
}

void HostStepRing::record_host_step(size_t s, double begin, double end) const {
  record(OffloadStage::kHostStep, slots_.at(s).shard, begin, end);
}

void HostStepRing::copy_in(size_t s, const Tensor& weights) {
  Slot& slot = slots_.at(s);
  FARTHING_CHECK(slot.waited && weights.nbytes() == slot.weights.nbytes(), "optimizer offload: copying slot ", s,
                 " back into ", weights.describe(), " before its copy out was waited for, or of another size");
  const double begin = now();
  transfer_->to_device(weights, static_cast<const std::byte*>(slot.memory) + weights_offset_);
  record(OffloadStage::kCopyIn, slot.shard, begin, now());
}

void HostStepRing::record(OffloadStage stage, size_t shard, double begin, double end) const {
  if (observer_) observer_(OffloadSpan{stage, shard, begin, end});
}

}  // namespace farthing::optim

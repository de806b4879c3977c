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
  worker_ = std::make_unique<HostStepWorker>();
}

HostStepRing::~HostStepRing() {
  worker_.reset();  // joined: no host step reads a slot any more
  for (Slot& slot : slots_) transfer_->free_host(slot.memory, slot_bytes_, MemoryCategory::kCommBuffers);
}

double HostStepRing::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void HostStepRing::step(size_t shard, const Tensor& grads, const Tensor& weights, HostStep host_step) {
  FARTHING_CHECK(grads.nbytes() <= weights_offset_ && weights.nbytes() <= slot_bytes_ - weights_offset_,
                 "optimizer offload: shard ", shard, "'s gradients ", grads.describe(), " or weights ",
                 weights.describe(), " do not fit the ring's slots, sized for the largest shard's ", dtype_name(grad_dtype_),
                 " gradients (OffloadOptions::grad_dtype: the parameter store's kept dtype)");
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  // NOTE: the slot's copy back is issued before this copy out, on the same ordered queue, so it
  // has read the slot before this overwrites it.
  if (slot.task != 0) copy_back(slot);
  slot.shard = shard;
  slot.weights = weights;
  std::byte* host_weights_memory = static_cast<std::byte*>(slot.memory) + weights_offset_;
  const double issued = now();
  const HostTransfer::Timer timer = start_timer();
  transfer_->to_host(slot.memory, grads);
  const HostTransfer::Ticket out = transfer_->to_host(host_weights_memory, weights);
  if (timer >= 0) transfer_->stop_timer(timer);
  transfer_->wait(out);  // the caller may free the gradients once this returns
  record(OffloadStage::kCopyOut, shard, issued, now(), timer);
  const Tensor host_grads(slot.memory, grads.dtype(), grads.shape(), Device::cpu());
  const Tensor host_weights(host_weights_memory, weights.dtype(), weights.shape(), Device::cpu());
  slot.task = worker_->submit([this, shard, host_grads, host_weights, host_step = std::move(host_step)] {
    const double begin = now();
    host_step(host_grads, host_weights);
    record(OffloadStage::kHostStep, shard, begin, now(), -1);
  });
}

void HostStepRing::copy_back(Slot& slot) {
  const double waited = now();
  worker_->wait(slot.task);
  slot.task = 0;
  record(OffloadStage::kHostWait, slot.shard, waited, now(), -1);
  const double issued = now();
  const HostTransfer::Timer timer = start_timer();
  transfer_->to_device(slot.weights, static_cast<const std::byte*>(slot.memory) + weights_offset_);
  if (timer >= 0) transfer_->stop_timer(timer);
  record(OffloadStage::kCopyIn, slot.shard, issued, now(), timer);
}

void HostStepRing::finish_step() {
  for (size_t k = 0; k < slots_.size(); ++k) {  // oldest first: the order they were handed over
    Slot& slot = slots_[(next_ + k) % slots_.size()];
    if (slot.task != 0) copy_back(slot);
  }
  transfer_->order_device_after_copies();
  std::vector<std::pair<OffloadSpan, HostTransfer::Timer>> spans;
  {
    std::lock_guard lock(spans_mutex_);
    spans.swap(spans_);
  }
  // With an observer the copies were timed on the device's clock: reading it waits for the
  // copies back (a timeline's cost; without one, nothing here waits for them).
  for (auto& [span, timer] : spans) {
    if (timer >= 0) span.device_seconds = transfer_->timer_seconds(timer);
    if (observer_) observer_(span);
  }
  transfer_->release_timers();
}

HostTransfer::Timer HostStepRing::start_timer() { return observer_ ? transfer_->start_timer() : -1; }

void HostStepRing::record(OffloadStage stage, size_t shard, double begin, double end, HostTransfer::Timer timer) {
  if (!observer_) return;
  OffloadSpan span;
  span.stage = stage;
  span.shard = shard;
  span.begin = begin;
  span.end = end;
  span.thread = std::this_thread::get_id();
  std::lock_guard lock(spans_mutex_);
  spans_.emplace_back(span, timer);
}

}  // namespace farthing::optim

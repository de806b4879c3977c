// host_offload.h — the host buffers an AdamW with optimizer.offload: host steps through.
//
// The master and moments live in host memory. A shard's step copies its gradients and bf16
// weights out of the device into one slot of a ring of K (optimizer.offload_ring_units), the CPU
// kernels step it there (the same scalar definition as the device's kernel, so the same bits),
// and the new weights are copied back in. The copies are HostTransfer's (backend/host_transfer.h):
// on CUDA asynchronous on a copy stream, so while the host steps one shard the next shards'
// copies run, and the weights' copy back is ordered before the device's next use of them. A slot
// holds the largest shard's gradients in the dtype the parameter store hands them over in (its
// kept dtype, OffloadOptions::grad_dtype: bf16 or fp32) and its bf16 weights.
// Each copy and each host step can be reported to an observer (the step timeline).
// Relies on: backend/host_transfer.h, optim_config.h. Tested by: tests/run/train/test_train_offload.sh,
// tests/run/train/test_offload_timeline.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "framework/backend/host_transfer.h"
#include "framework/optim/optim_config.h"

namespace farthing::optim {

struct OffloadOptions {
  Offload where = Offload::kNone;
  int64_t ring_units = 2;  // K: shards whose copies may be in flight at once
  // The gradients' dtype each step hands over (the parameter store's kept dtype): the slots hold
  // the largest shard's gradients in it. f32 has room for either.
  DType grad_dtype = DType::kF32;
};

// One piece of an offloaded step, on the host's clock: a copy out (from its issue until the host
// knew it had landed), a host step, a copy in (its issue; it lands before the next device op).
enum class OffloadStage : uint8_t { kCopyOut, kHostStep, kCopyIn };
struct OffloadSpan {
  OffloadStage stage = OffloadStage::kCopyOut;
  size_t shard = 0;
  double begin = 0.0, end = 0.0;
};
using OffloadObserver = std::function<void(const OffloadSpan&)>;

class HostStepRing {
 public:
  // Bytes of host memory the ring holds: K slots of the largest shard's gradients (grad_dtype) and bf16 weights.
  static int64_t planned_bytes(const OffloadOptions& options, const std::vector<ShardSpec>& shards);

  HostStepRing(Backend& device, const OffloadOptions& options, const std::vector<ShardSpec>& shards);
  ~HostStepRing();
  HostStepRing(const HostStepRing&) = delete;
  HostStepRing& operator=(const HostStepRing&) = delete;

  void set_observer(OffloadObserver observer) { observer_ = std::move(observer); }
  size_t ring_units() const { return slots_.size(); }

  // Issues shard `shard`'s copies out (gradients, then weights) into the next slot; returns it.
  size_t copy_out(size_t shard, const Tensor& grads, const Tensor& weights);
  // Waits for the slot's copies out; its host tensors (same dtypes and sizes as the device's).
  Tensor host_grads(size_t slot);
  Tensor host_weights(size_t slot);
  // Records a host step of the slot's shard (begin/end on the timeline clock).
  void record_host_step(size_t slot, double begin, double end) const;
  // Issues the slot's weights' copy back into `weights`.
  void copy_in(size_t slot, const Tensor& weights);
  // The device's ops queued from now on wait for every copy back issued so far.
  void order_device_after_copies() { transfer_->order_device_after_copies(); }

  static double now();

 private:
  struct Slot {
    void* memory = nullptr;
    size_t shard = 0;
    Tensor grads, weights;  // the device tensors last copied out of (dtype and shape)
    HostTransfer::Ticket out = 0;
    double issued = 0.0;
    bool waited = true;
  };
  void record(OffloadStage stage, size_t shard, double begin, double end) const;

  std::unique_ptr<HostTransfer> transfer_;
  DType grad_dtype_ = DType::kF32;
  size_t slot_bytes_ = 0, weights_offset_ = 0;
  std::vector<Slot> slots_;
  size_t next_ = 0;
  OffloadObserver observer_;
};

}  // namespace farthing::optim

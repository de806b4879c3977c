// host_offload.h — the host buffers an AdamW with optimizer.offload: host steps through, and the
// thread that steps them.
//
// The master and moments live in host memory. A shard's step copies its gradients and bf16 weights
// out of the device into one slot of a ring of K (optimizer.offload_ring_units) and hands the CPU
// kernels' step of that slot (the same scalar definition as the device's kernel, so the same bits)
// to a worker thread (host_step_worker.h), then returns: the thread that drives the device goes on
// (with the optimizer in backward, to the next units' backward) while the worker steps. The slot's
// new weights are copied back when the slot is next needed (after waiting for its host step: with
// every slot busy, the driving thread waits for the oldest) or at finish_step(), which waits for
// every host step and orders the device's next ops (the next forward, publish_weights) after the
// copies back. Every copy is issued by the driving thread; the worker touches host memory only.
// The copies are HostTransfer's (backend/host_transfer.h): on CUDA asynchronous on a copy stream.
// A slot holds the largest shard's gradients in the dtype the parameter store hands them over in
// (its kept dtype, OffloadOptions::grad_dtype: bf16 or fp32) and its bf16 weights.
// Each copy, host step and wait for one can be reported to an observer (the step timeline), at
// finish_step, on the driving thread; copies carry their time on the device's clock where it has
// one (CUDA events).
// Relies on: backend/host_transfer.h, host_step_worker.h, optim_config.h. Tested by:
// tests/optim/test_host_step_ring.cpp, tests/train/loop/test_train_offload.sh,
// tests/train/loop/test_offload_timeline.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "framework/backend/host_transfer.h"
#include "framework/optim/host_step_worker.h"
#include "framework/optim/optim_config.h"

namespace farthing::optim {

struct OffloadOptions {
  Offload where = Offload::kNone;
  int64_t ring_units = 2;  // K: shards on the host at once (copied out, stepping, or not yet copied back)
  // The gradients' dtype each step hands over (the parameter store's kept dtype): the slots hold
  // the largest shard's gradients in it. f32 has room for either.
  DType grad_dtype = DType::kF32;
};

// One piece of an offloaded step, on the host's clock: a copy out (from its issue until the
// driving thread knew it had landed), a host step (on the worker), the driving thread's wait for
// a host step (before reusing its slot, or at the step's end), a copy in (its issue; it lands
// before the device's next use of the weights).
enum class OffloadStage : uint8_t { kCopyOut, kHostStep, kHostWait, kCopyIn };
struct OffloadSpan {
  OffloadStage stage = OffloadStage::kCopyOut;
  size_t shard = 0;
  double begin = 0.0, end = 0.0;
  double device_seconds = -1.0;  // a copy's time on the device's copy queue (CUDA events); -1 where not measured
  std::thread::id thread;        // the thread that did it: the worker's for host steps
};
using OffloadObserver = std::function<void(const OffloadSpan&)>;

class HostStepRing {
 public:
  // Bytes of host memory the ring holds: K slots of the largest shard's gradients (grad_dtype) and bf16 weights.
  static int64_t planned_bytes(const OffloadOptions& options, const std::vector<ShardSpec>& shards);

  HostStepRing(Backend& device, const OffloadOptions& options, const std::vector<ShardSpec>& shards);
  ~HostStepRing();  // lets the host steps handed over finish (or drops them after an error) first
  HostStepRing(const HostStepRing&) = delete;
  HostStepRing& operator=(const HostStepRing&) = delete;

  void set_observer(OffloadObserver observer) { observer_ = std::move(observer); }
  size_t ring_units() const { return slots_.size(); }

  // Shard `shard`'s host step: copies `grads` and `weights` (device tensors) out into the next
  // slot and hands host_step(host_grads, host_weights) — host tensors of the same dtypes and
  // sizes; the weights it writes go back into `weights` — to the worker. When that slot is still
  // busy, first waits for its host step and issues its copy back. Returns once the copies out
  // have landed (the caller may free `grads`), before the host step runs. Rethrows an error of
  // an earlier host step.
  using HostStep = std::function<void(const Tensor& host_grads, const Tensor& host_weights)>;
  void step(size_t shard, const Tensor& grads, const Tensor& weights, HostStep host_step);
  // The end of an optimizer step: waits for every host step handed over (rethrowing the first
  // error), issues the copies back not issued yet, makes the device's ops queued from now on wait
  // for them, and reports the step's spans to the observer.
  void finish_step();

  static double now();

 private:
  struct Slot {
    void* memory = nullptr;
    size_t shard = 0;
    Tensor weights;  // the device tensor the weights go back into
    HostStepWorker::Ticket task = 0;  // its host step, handed over and not yet copied back; 0 when free
  };
  void copy_back(Slot& slot);
  HostTransfer::Timer start_timer();
  // Keeps a span for finish_step's report (any thread); a copy's timer gives its device time.
  void record(OffloadStage stage, size_t shard, double begin, double end, HostTransfer::Timer timer);

  std::unique_ptr<HostTransfer> transfer_;
  DType grad_dtype_ = DType::kF32;
  size_t slot_bytes_ = 0, weights_offset_ = 0;
  std::vector<Slot> slots_;
  size_t next_ = 0;  // the slot the next step takes: the oldest handed over
  OffloadObserver observer_;
  std::mutex spans_mutex_;  // the worker records host steps
  std::vector<std::pair<OffloadSpan, HostTransfer::Timer>> spans_;  // this step's, in record order
  std::unique_ptr<HostStepWorker> worker_;  // last: its tasks use the slots
};

}  // namespace farthing::optim

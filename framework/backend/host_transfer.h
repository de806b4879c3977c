// host_transfer.h — explicit copies between a backend's device memory and host memory, in the
// order they are issued, for an optimizer whose state lives on the host (optimizer.offload: host).
//
// A copy to the host starts after every op queued on the device so far (the gradient backward
// just produced); a copy to the device finishes before any device op queued after the next
// order_device_after_copies() (the units' next use of their new weights, after the step, while
// backward goes on with the units before them). Both run in issue order on one queue, so a host buffer may be written
// again by a later copy to the host as soon as the copy to the device that read it was issued;
// the host itself may only touch a buffer once wait(ticket) of the copy into it has returned.
//   CUDA (cuda_host_transfer.cu): pinned host memory, cudaMemcpyAsync on a copy stream of its
//     own ordered against the compute stream by events, so the host is not blocked while a copy
//     runs and the compute stream is not blocked by the host;
//   CPU: Backend::copy, done when the call returns;
//   the strict test device (strict_host_transfer.h): deferred, each copy landing only when
//     wait() or order_device_after_copies() says it must, its destination NaN until then, so a
//     missing wait or ordering fails on any machine (on this device every transfer is explicit).
// Relies on: backend.h, core/memory.h. Tested by: tests/train/loop/test_train_offload.sh (strict
// device, bit for bit), tests/train/loop/test_offload_timeline.cpp, tests/optim/test_host_step_ring.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "framework/backend/backend.h"
#include "framework/core/memory.h"

namespace farthing {

class HostTransfer {
 public:
  using Ticket = int64_t;
  virtual ~HostTransfer() = default;
  // Host memory the copies may use (pinned on CUDA), 64-byte aligned, charged to the host's
  // tracker under `category`.
  virtual void* allocate_host(size_t bytes, MemoryCategory category) = 0;
  virtual void free_host(void* data, size_t bytes, MemoryCategory category) = 0;
  // host_dst <- device_src (contiguous), after every device op queued so far.
  virtual Ticket to_host(void* host_dst, const Tensor& device_src) = 0;
  // device_dst <- host_src (contiguous, device_dst's dtype and size).
  virtual Ticket to_device(const Tensor& device_dst, const void* host_src) = 0;
  // Device ops queued from now on wait for every copy issued so far (the host does not wait).
  virtual void order_device_after_copies() = 0;
  // Blocks the host until the copy `ticket` (and every one issued before it) is done.
  virtual void wait(Ticket ticket) = 0;

  // The device's own clock over a group of copies, for a timeline: start_timer() before issuing
  // them, stop_timer() after; timer_seconds() waits for the group and says how long it took on
  // the device's copy queue (CUDA: timing events recorded on the copy stream, read by
  // cudaEventElapsedTime), or -1 where the device keeps no clock of its own (the CPU and the
  // strict device, whose copies are the host's own time). release_timers() ends every timer.
  using Timer = int64_t;
  virtual Timer start_timer() = 0;
  virtual void stop_timer(Timer timer) = 0;
  virtual double timer_seconds(Timer timer) = 0;
  virtual void release_timers() = 0;
};

// The transfer for `backend`'s device: CUDA's copy stream, or synchronous Backend::copy.
std::unique_ptr<HostTransfer> make_host_transfer(Backend& backend);

}  // namespace farthing

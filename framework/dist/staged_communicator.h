// staged_communicator.h — collectives over one device's buffers, carried by a host
// communicator: each input is copied to host staging through the device's backend, the host
// collective runs, and the result is copied back when the handle is waited on.
//
// This is the path for device buffers when no device-native communicator can be used (two
// ranks on one GPU, which NCCL refuses; the strict test device, which has none), and the one
// the trainer uses off the host today. The reductions are the host communicator's, in its
// fixed rank order, so results are bitwise those of the host path.
// NOTE: the copies run on the thread that issues or waits (never on the host communicator's
// worker), so the backend is only ever driven from the caller's thread. Host staging is charged
// to MemoryCategory::kCommBuffers on the host.
// Relies on: communicator.h, backend/backend.h. Tested by: tests/train/loop/test_train_strict_device.sh
// (np 2 at ZeRO-3 on the strict device, bitwise the CPU run).
#pragma once

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/dist/communicator.h"

namespace farthing {

class StagedCommunicator final : public Communicator {
 public:
  // host must move host buffers; backend is the device whose buffers this communicator takes.
  StagedCommunicator(Communicator& host, Backend& backend);

  const Topology& topology() const override { return host_.topology(); }
  Device device() const override { return backend_.device(); }
  CommHandle all_gather_async(const Tensor& out, const Tensor& in) override;
  CommHandle reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  CommHandle all_reduce_async(const Tensor& inout, ReduceOp op) override;
  CommHandle broadcast_async(const Tensor& inout, int root) override;
  CommHandle barrier_async() override { return host_.barrier_async(); }
  // Its waits are the host communicator's.
  void set_collective_timeout(double seconds) override { host_.set_collective_timeout(seconds); }
  void set_reduce_order(ReduceOrder order) override { host_.set_reduce_order(order); }

 private:
  // A host buffer shaped like t, holding a copy of t's values when `fill`.
  Buffer stage(const Tensor& t, bool fill);
  // The handle: waits on the host collective, then copies `from` (host) into `to` (device).
  CommHandle finish_into(CommHandle host_op, const Tensor& to, Buffer from);

  Communicator& host_;
  Backend& backend_;
};

}  // namespace farthing

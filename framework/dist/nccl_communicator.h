// nccl_communicator.h — the Communicator over NCCL, for CUDA device buffers.
//
// Includable from plain C++: no CUDA or NCCL type appears here (streams are opaque pointers).
// Defined only in CUDA builds (nccl_communicator.cu); CPU-only code never links it.
// Bootstrapped through a host communicator (normally MpiCommunicator): rank 0 creates the
// ncclUniqueId and broadcasts it, then every rank joins with ncclCommInitRank.
//
// Ordering: ops run on the communicator's own stream in issue order. Each op first waits (on
// the GPU, not the host) for an event recorded on the compute stream, so work queued there
// before the call is finished before the collective reads its buffers. wait() blocks the host
// until the op is done on the GPU; wait_on_device() makes the compute stream wait for it instead,
// and hands the op to the communicator's watchdog (collective_watchdog.h: NCCL's asynchronous
// errors and the timeout end the job); test() never blocks.
//
// NOTE (numerics): f32/f64 sums and maxes use the same fixed rank order as MpiCommunicator
// (an all-to-all of blocks through grouped ncclSend/ncclRecv, a kernel that reduces ranks
// 0..N-1 in order, compiled with -fmad=false, then ncclAllGather), so results are bitwise
// identical to the MPI path and independent of NCCL's ring/tree choice. Integer reductions use
// NCCL's own (exact).
// Relies on: CUDA runtime, NCCL >= 2.13, a host Communicator for the bootstrap.
// Tested by: tests/dist/test_nccl.cpp (CUDA builds; skips without a GPU).
#pragma once

#include <memory>

#include "framework/dist/communicator.h"

namespace farthing {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over bootstrap (every rank calls it); selects device_index on this thread.
  NcclCommunicator(Communicator& bootstrap, int device_index);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  const Topology& topology() const override { return topology_; }
  Device device() const override { return Device::cuda(device_index_); }
  // The stream whose earlier work every collective waits for (a cudaStream_t; nullptr is the
  // legacy default stream, the initial choice).
  void set_compute_stream(void* stream) { compute_stream_ = stream; }

  CommHandle all_gather_async(const Tensor& out, const Tensor& in) override;
  CommHandle reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  CommHandle all_reduce_async(const Tensor& inout, ReduceOp op) override;
  CommHandle broadcast_async(const Tensor& inout, int root) override;
  CommHandle barrier_async() override;
  // A bounded wait polls the op's event and NCCL's asynchronous error instead of blocking on
  // the event; ops ordered on the device are bounded by the watchdog (compiled, not yet run on a
  // GPU).
  void set_collective_timeout(double seconds) override;
  void set_reduce_order(ReduceOrder order) override { order_ = order; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Topology topology_{};
  int device_index_ = 0;
  void* compute_stream_ = nullptr;
  double timeout_s_ = 0.0;
  int64_t issued_ = 0;
  ReduceOrder order_ = ReduceOrder::kOrdered;
};

}  // namespace farthing

// communicator.h — the collectives that ZeRO and the trainer need, over Tensors, behind one
// interface: MPI for host buffers (mpi_communicator.h), NCCL for device buffers
// (nccl_communicator.h, CUDA builds only).
//
// Every collective has an async form returning a CommHandle; the blocking form is the async
// one followed by wait(). Ops on one communicator run in the order they were issued (like a
// CUDA stream), and every rank must issue the same collectives in the same order, as in MPI.
// Buffers must stay alive and untouched until the handle's wait() returns (or, for device
// work, until wait_on_device() has ordered the compute stream after the op).
//
// NOTE (numerics): floating-point sums (f32, f64) are reduced in a fixed order on every
// implementation that can afford it: result = ((x_0 + x_1) + x_2) + ... over ranks 0..N-1,
// identical on every rank and from run to run, whatever algorithm the MPI library picks. Max
// and integer sums are exact, so they use the library's native reductions. Narrow floats
// (bf16, f16, fp8) may be gathered and broadcast (as raw bits) but never reduced: gradients
// are reduced in fp32 (docs/design.md §2), so cast first.
// Relies on: framework/core (Tensor, DType, Error).
// Tested by: tests/dist/test_collectives.cpp (mpirun -np 2 and -np 3, and np=1 without mpirun).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "framework/core/tensor.h"

namespace farthing {

enum class ReduceOp : uint8_t { kSum, kMax };
std::string_view reduce_op_name(ReduceOp op);

// How floating-point sums are reduced. kOrdered: ((x_0 + x_1) + x_2) + ... in rank order, the
// same bits on every rank and at every world size (the default; see the NOTE above). kNative:
// the library's own algorithm (MPI's, NCCL's ring or tree), usually faster and not bitwise:
// the order of the additions depends on the algorithm, the message size and the world size.
enum class ReduceOrder : uint8_t { kOrdered, kNative };

// Where this process sits in the job.
struct Topology {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // rank among the processes on this node
  int local_size = 1;  // processes on this node
  int node_count = 1;
};

// A pending collective. wait() blocks until it has finished and rethrows its error, if any;
// it is idempotent. test() never blocks. Destroying a pending handle waits for it (buffers
// may not be freed under a running collective); an error found then is printed, not thrown.
// Exception: while an exception unwinds, an unfinished handle is dropped without waiting, since
// a peer may never join the collective; the job is then expected to end (abort_on_error.h). An
// op that had not started by then never starts (Op::abandon); one already running may still
// touch its buffers until the job ends. (NCCL's ops are queued on the GPU as they are issued:
// abandon keeps their temporaries from going back to the pool instead.)
class CommHandle {
 public:
  class Op {
   public:
    virtual ~Op() = default;
    virtual bool test() = 0;  // true once finished (successfully or not)
    virtual void wait() = 0;  // blocks; throws the op's error
    // Orders the device's compute work queued from now on after this op; by default the host
    // waits, which orders everything. A communicator with a stream of its own (NCCL) makes the
    // compute stream wait for the op's event instead, and the host goes on at once.
    virtual void wait_on_device() { wait(); }
    // The handle let go of the op without waiting while an error unwinds (see below): an op not
    // yet started should not start, since its buffers are being freed.
    virtual void abandon() {}
  };

  CommHandle() = default;  // an already-finished handle
  explicit CommHandle(std::shared_ptr<Op> op) : op_(std::move(op)) {}
  CommHandle(CommHandle&&) noexcept = default;
  CommHandle& operator=(CommHandle&& other) noexcept;
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  ~CommHandle();

  void wait();
  bool test();
  // Finishes the handle for the device's compute stream rather than for the host: work queued
  // on that stream afterwards runs after the collective, and its buffers may be freed in that
  // stream's order (the stream-ordered pool) — but the host must not read them before a later
  // host wait (Backend::synchronize). Where the communicator has no stream of its own (MPI, the
  // staged path) this is wait(). A device-ordered op's error or timeout is found by the
  // communicator's watchdog (collective_watchdog.h), which ends the job. Idempotent, like wait().
  void wait_on_device();

 private:
  void wait_noexcept() noexcept;
  std::shared_ptr<Op> op_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual const Topology& topology() const = 0;
  int rank() const { return topology().rank; }
  int world_size() const { return topology().world_size; }
  int local_rank() const { return topology().local_rank; }
  int local_size() const { return topology().local_size; }
  int node_count() const { return topology().node_count; }
  // The device whose buffers this communicator moves (cpu for MPI, cuda:k for NCCL).
  virtual Device device() const = 0;

  // out (world_size * n elements) <- the inputs of all ranks (n elements each), rank-major:
  // rank r's input lands at out[r*n, (r+1)*n). in may alias exactly that slot of out.
  virtual CommHandle all_gather_async(const Tensor& out, const Tensor& in) = 0;
  // out (n elements) <- op over ranks of in[rank*n, (rank+1)*n) (in has world_size * n).
  virtual CommHandle reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) = 0;
  // inout <- op over ranks of inout, the same on every rank.
  virtual CommHandle all_reduce_async(const Tensor& inout, ReduceOp op) = 0;
  // inout <- root's inout.
  virtual CommHandle broadcast_async(const Tensor& inout, int root) = 0;
  virtual CommHandle barrier_async() = 0;

  // The longest one wait for a collective may last, in seconds (0, the default: no limit). Past
  // it, wait() throws an error naming this rank and the collective (collective_timeout_message),
  // and the tool ends the job (abort_on_error.h): a peer that died, hung or never joined cannot
  // hold the others forever. Training sets distributed.collective_timeout_s. Set it on every rank
  // alike, between collectives.
  virtual void set_collective_timeout(double seconds) = 0;
  // Applies to f32/f64 sums issued from now on (max and integers are exact either way).
  virtual void set_reduce_order(ReduceOrder order) = 0;

  void all_gather(const Tensor& out, const Tensor& in) { all_gather_async(out, in).wait(); }
  void reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
    reduce_scatter_async(out, in, op).wait();
  }
  void all_reduce(const Tensor& inout, ReduceOp op) { all_reduce_async(inout, op).wait(); }
  void broadcast(const Tensor& inout, int root) { broadcast_async(inout, root).wait(); }
  void barrier() { barrier_async().wait(); }
};

// Shared argument checks, so every implementation rejects bad calls with the same message.
void check_all_gather_args(const Communicator& comm, const Tensor& out, const Tensor& in);
void check_reduce_scatter_args(const Communicator& comm, const Tensor& out, const Tensor& in,
                               ReduceOp op);
void check_all_reduce_args(const Communicator& comm, const Tensor& inout, ReduceOp op);
// A collective as a timeout's message names it ("all_reduce of 8 f64", "barrier"), kept as its
// parts: issuing a collective formats nothing; only a timeout does.
struct CollectiveName {
  const char* collective = "";
  int64_t elements = -1;  // -1: no buffer (a barrier)
  DType dtype = DType::kU8;
  CollectiveName(const char* name) : collective(name) {}  // NOLINT: a bare name converts
  CollectiveName(const char* name, const Tensor& t) : collective(name), elements(t.numel()), dtype(t.dtype()) {}
  std::string text() const;
};
// `what` is collective number `number` of its communicator on this rank; every rank numbers
// them alike, so the same number names the same collective everywhere.
std::string collective_timeout_message(const CollectiveName& what, int64_t number, double seconds);
void check_broadcast_args(const Communicator& comm, const Tensor& inout, int root);
// Reductions accept f32, f64, i32, i64 and u8 (max only); narrow floats are refused (cast to
// f32 first).
void check_reducible(DType dtype, ReduceOp op, const char* collective);

}  // namespace farthing

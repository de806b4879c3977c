// mpi_communicator.h — the Communicator over MPI, for host buffers; also MPI's lifetime.
//
// Each communicator duplicates its parent (MPI_COMM_WORLD by default), so its traffic never
// mixes with parallel HDF5's or anyone else's, and sets MPI_ERRORS_RETURN on the copy so that
// FARTHING_MPI_CHECK can throw. Collectives run in issue order on one worker thread per
// communicator, with blocking MPI calls: an async collective really progresses while the
// caller computes (Open MPI's non-blocking collectives only advance inside MPI calls). This
// needs MPI_THREAD_MULTIPLE; when MPI was initialised by someone else at a lower level, ops run
// inline at issue time instead (still correct, no overlap).
//
// NOTE (numerics): f32/f64 reductions (sum and max) are not MPI_Allreduce (unless sums are set
// to ReduceOrder::kNative): each rank receives
// the block it owns from every rank (MPI_Alltoall) and reduces it in rank order 0..N-1, then
// all_reduce gathers the blocks. Same bytes moved as a ring reduce-scatter/all-gather, result
// identical on every rank and independent of the algorithm or message size MPI picks; max
// propagates NaN. Integer reductions are exact and use MPI's own. Temporaries are charged to
// MemoryCategory::kCommBuffers (all_reduce of n elements holds 2n; reduce_scatter holds n), and
// held from the issue to the handle's wait, both on the caller's thread: the tracker's peaks
// then do not depend on when the worker ran the op, so `farthing plan` can state them exactly.
//
// World size 1 needs no mpirun: MPI is initialised as a singleton (Open MPI supports that), so
// single-process runs take exactly the same code path, and parallel HDF5 works too. Without a
// launcher in the environment the singleton is "isolated" (no orted daemon is started).
// Relies on: MPI (Open MPI), framework/core.
// Tested by: tests/dist/test_collectives.cpp (np 1, 2, 3), tests/dist/test_fault.sh.
#pragma once

#include <mpi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/dist/communicator.h"
#include "framework/dist/roll_call.h"

namespace farthing {

// Initialises MPI once (MPI_THREAD_MULTIPLE requested) unless it already is; when this call
// initialised it, MPI_Finalize runs at process exit. Throws when MPI was already finalised.
void mpi_ensure_initialized();
// The thread level MPI provided (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
int mpi_thread_level();

class MpiCommunicator final : public Communicator {
 public:
  // Collective over parent: every process of parent must construct it together.
  explicit MpiCommunicator(MPI_Comm parent = MPI_COMM_WORLD);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  const Topology& topology() const override { return topology_; }
  Device device() const override { return Device::cpu(); }
  // This communicator's own MPI communicator (for parallel HDF5 and other MPI users). Calls on
  // it from the caller's thread are safe alongside pending collectives (MPI_THREAD_MULTIPLE).
  MPI_Comm mpi_comm() const { return comm_; }
  // True when collectives progress on the worker thread (see above).
  bool overlaps() const { return worker_ != nullptr; }
  // The ranks that have not issued collective number `needed` of this communicator, asked now
  // (roll_call.h): one clause for an error line. Says so where no roll call is possible.
  std::string absent_ranks(int64_t needed) const;
  // How many collectives this rank has issued on it so far.
  int64_t collectives_issued() const { return issued_; }

  CommHandle all_gather_async(const Tensor& out, const Tensor& in) override;
  CommHandle reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) override;
  CommHandle all_reduce_async(const Tensor& inout, ReduceOp op) override;
  CommHandle broadcast_async(const Tensor& inout, int root) override;
  CommHandle barrier_async() override;
  // Bounds each wait on the worker thread; ops that run inline (no MPI_THREAD_MULTIPLE) cannot
  // be bounded and ignore it.
  void set_collective_timeout(double seconds) override { timeout_s_ = seconds; }
  double collective_timeout() const { return timeout_s_; }
  void set_reduce_order(ReduceOrder order) override { order_ = order; }
  ReduceOrder reduce_order() const { return order_; }

 private:
  class Worker;
  // `what` names the collective in a timeout's message.
  // temporaries: the op's buffers, released when its handle is waited for.
  CommHandle submit(std::function<void()> body, CollectiveName what, std::vector<Buffer> temporaries = {});

  MPI_Comm comm_ = MPI_COMM_NULL;
  Topology topology_{};
  std::unique_ptr<Worker> worker_;
  double timeout_s_ = 0.0;
  std::atomic<int64_t> issued_{0};  // collectives issued so far: the next one's number
  // Answers "who has not arrived" when a wait runs out (roll_call.h); null without a worker.
  std::unique_ptr<RollCall> roll_call_;
  ReduceOrder order_ = ReduceOrder::kOrdered;
};

// A communicator over every process of the job (MPI_COMM_WORLD), initialising MPI if needed.
std::unique_ptr<MpiCommunicator> make_world_communicator();

}  // namespace farthing

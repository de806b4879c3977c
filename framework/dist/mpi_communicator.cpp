// mpi_communicator.cpp — see mpi_communicator.h.
#include "framework/dist/mpi_communicator.h"

#include <climits>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/dist/launcher_env.h"
#include "framework/dist/mpi_check.h"

namespace farthing {

namespace dist_detail {

void throw_mpi_error(int code, const char* expression, const char* file, int line,
                     const char* function) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::snprintf(text, sizeof text, "?");
  int error_class = code;
  MPI_Error_class(code, &error_class);
  throw Error(error_detail::concat("MPI error ", code, " (class ", error_class, "): ", text,
                                   "\n  at ", file, ":", line, " in ", function,
                                   "() [check failed: ", expression, "]"));
}

}  // namespace dist_detail

namespace {

struct MpiLifetime {
  bool we_initialized = false;
  int thread_level = MPI_THREAD_SINGLE;
  std::string private_session_base;  // an isolated singleton's own, removed after MPI_Finalize
  ~MpiLifetime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (we_initialized && !finalized) MPI_Finalize();
    std::error_code ignored;
    if (!private_session_base.empty()) std::filesystem::remove_all(private_session_base, ignored);
  }
};

// Every isolated singleton names its Open MPI session directory <base>/ompi.<host>.<uid>/jf.0/1,
// so two farthing processes on one machine would share it, and the first to finalise deletes it
// under the other: MPI_Init then fails ("orte_ess_init failed"), or MPI-IO's shared-file-pointer
// files vanish mid-write. Each singleton gets a base of its own under TMPDIR (empty: mkdtemp
// failed, and Open MPI keeps its default).
std::string make_private_session_base() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/farthing-mpi-XXXXXX";
  return mkdtemp(path.data()) != nullptr ? path : std::string();
}

MpiLifetime& mpi_lifetime() {
  static MpiLifetime lifetime;
  return lifetime;
}

std::mutex& init_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

void mpi_ensure_initialized() {
  std::lock_guard lock(init_mutex());
  MpiLifetime& lifetime = mpi_lifetime();  // constructed before MPI_Init: finalizes after users
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  FARTHING_CHECK(!finalized, "MPI was already finalised: communicators must be created before "
                             "MPI_Finalize");
  if (initialized) {
    MPI_Query_thread(&lifetime.thread_level);
    return;
  }
  // A process that no launcher started is a world of one. Open MPI's singleton init would fork
  // an orted daemon (found next to mpirun) only to support MPI_Comm_spawn, which farthing never
  // calls; "isolated" skips it, so world size 1 needs neither mpirun nor orted installed (the
  // GPU package, tools/gpu/, carries neither). An explicit setting in the environment wins.
  if (read_launcher_env().launcher.empty()) {
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    if (std::getenv("OMPI_MCA_orte_tmpdir_base") == nullptr) {
      lifetime.private_session_base = make_private_session_base();
      if (!lifetime.private_session_base.empty()) {
        setenv("OMPI_MCA_orte_tmpdir_base", lifetime.private_session_base.c_str(), 1);
      }
    }
  }
  int provided = MPI_THREAD_SINGLE;
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  FARTHING_CHECK(rc == MPI_SUCCESS, "MPI_Init_thread failed with code ", rc,
                 " (is Open MPI installed and, under a launcher, started with mpirun/srun?)");
  lifetime.we_initialized = true;
  lifetime.thread_level = provided;
}

int mpi_thread_level() {
  std::lock_guard lock(init_mutex());
  return mpi_lifetime().thread_level;
}

// Runs ops one at a time in issue order on its own thread.
class MpiCommunicator::Worker {
 public:
  class Task final : public CommHandle::Op {
   public:
    // A wait longer than timeout_s (> 0) throws, naming the collective (what, number).
    // On a timeout the message names the ranks that have not arrived (comm's roll call).
    Task(std::function<void()> body, CollectiveName what, int64_t number, double timeout_s, std::vector<Buffer> temporaries,
         const MpiCommunicator* comm)
        : body_(std::move(body)), what_(what), number_(number), timeout_s_(timeout_s),
          temporaries_(std::move(temporaries)), comm_(comm) {}
    void run() noexcept {
      bool abandoned = false;
      {
        std::lock_guard lock(mutex_);
        abandoned = abandoned_;
      }
      try {
        if (!abandoned) body_();
      } catch (...) {
        error_ = std::current_exception();
      }
      body_ = nullptr;
      {
        std::lock_guard lock(mutex_);
        done_ = true;
      }
      cv_.notify_all();
    }
    bool test() override {
      std::lock_guard lock(mutex_);
      return done_;
    }
    void abandon() override {
      std::lock_guard lock(mutex_);
      abandoned_ = true;
    }
    void wait() override {
      std::unique_lock lock(mutex_);
      if (timeout_s_ > 0.0) {
        // NOTE: the op stays on the worker, blocked in MPI; the error ends the job (abort_on_error.h).
        if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s_), [this] { return done_; })) {
          lock.unlock();
          throw Error(collective_timeout_message(what_, number_, timeout_s_, comm_->absent_ranks(number_)));
        }
      } else {
        cv_.wait(lock, [this] { return done_; });
      }
      // The temporaries go on the waiting thread, so the memory tracker sees them from issue to
      // wait on the caller's thread, whenever the worker ran the op.
      temporaries_.clear();
      if (error_) std::rethrow_exception(error_);
    }

   private:
    std::function<void()> body_;
    CollectiveName what_;
    int64_t number_;
    double timeout_s_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    bool abandoned_ = false;  // its handle let go while an error unwound: never run the body
    std::exception_ptr error_;
    std::vector<Buffer> temporaries_;
    const MpiCommunicator* comm_;
  };

  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();  // drains the queue first: pending ops own live buffers
  }
  void push(std::shared_ptr<Task> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_all();
  }
  bool busy() {
    std::lock_guard lock(mutex_);
    return running_ || !queue_.empty();
  }
  // Leaves the thread running its current op (it may never finish) and drops the queued ones;
  // the Worker must then be leaked, since the thread still uses it.
  void abandon() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    cv_.notify_all();
    thread_.detach();
  }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Task> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        running_ = true;
      }
      task->run();
      std::lock_guard lock(mutex_);
      running_ = false;
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stopping_ = false;
  bool running_ = false;
  std::thread thread_;
};

namespace {

// Every pair of ranks meets first with both of them sending at once: each rank posts a zero-byte
// receive from, and a send to, every other rank on the parent, before anything else runs on it.
// Why: Open MPI's TCP transport connects a pair when it first sends. When only one side sends first
// (as in MPI_Comm_dup's agreement on a context id, or in the all-to-all's pairwise steps), the pair
// gets one socket that later carries both directions, and MiB-sized exchanges both ways ran at
// half the link's rate over the multihost harness's wire; when both send first, each direction
// gets a socket of its own and the full rate (docs/scaling.md, "How the harness runs MPI"). Over
// shared memory it costs a message per peer and nothing else. The greeting opens every pair's
// connection at start (the CPU path's all-to-all reductions would open them in the first step
// anyway), so it is skipped where that many sockets could exhaust the descriptor limit.
void greet_every_peer(MPI_Comm parent) {
  int rank = 0, world = 1;
  FARTHING_MPI_CHECK(MPI_Comm_rank(parent, &rank));
  FARTHING_MPI_CHECK(MPI_Comm_size(parent, &world));
  if (world == 1) return;
  rlimit descriptors{};
  constexpr rlim_t kSocketsPerPeer = 4;  // two TCP links (docs/multinode.md), a socket each way
  if (getrlimit(RLIMIT_NOFILE, &descriptors) == 0 && descriptors.rlim_cur != RLIM_INFINITY &&
      kSocketsPerPeer * rlim_t(world - 1) > descriptors.rlim_cur / 2) {
    return;
  }
  constexpr int kGreetingTag = 30071;  // below MPI_TAG_UB's guaranteed 32767; used nowhere else
  std::vector<MPI_Request> requests;
  requests.reserve(2 * size_t(world - 1));
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    requests.emplace_back();
    FARTHING_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, peer, kGreetingTag, parent, &requests.back()));
    requests.emplace_back();
    FARTHING_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, peer, kGreetingTag, parent, &requests.back()));
  }
  FARTHING_MPI_CHECK(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
}

// The MPI datatype of an element and how many of them one tensor element is. Narrow floats
// travel as bytes (gathers and broadcasts only: check_reducible keeps them out of reductions).
struct MpiElement {
  MPI_Datatype type;
  int64_t per_element;
};

MpiElement mpi_element(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {MPI_FLOAT, 1};
    case DType::kF64: return {MPI_DOUBLE, 1};
    case DType::kI32: return {MPI_INT32_T, 1};
    case DType::kI64: return {MPI_INT64_T, 1};
    case DType::kU8: return {MPI_UINT8_T, 1};
    default: return {MPI_BYTE, int64_t(dtype_size_bytes(dtype))};
  }
}

int mpi_count(int64_t elements, DType dtype, const char* collective) {
  const int64_t count = elements * mpi_element(dtype).per_element;
  FARTHING_CHECK(count <= INT_MAX, collective, ": ", elements, " ", dtype_name(dtype),
                 " elements exceed MPI's int count (", INT_MAX,
                 "); split the buffer into pieces below 2^31 MPI elements");
  return int(count);
}

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF64; }


MPI_Op native_op(ReduceOp op) { return op == ReduceOp::kSum ? MPI_SUM : MPI_MAX; }

// NOTE: max propagates NaN (std::fmax would drop it), so a non-finite value on any rank is
// seen by all; sums add in rank order, one rounding per addition, no contraction.
template <class T>
void reduce_blocks_in_rank_order(T* out, const T* blocks, int64_t n, int world, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    T acc = blocks[i];
    for (int r = 1; r < world; ++r) {
      const T x = blocks[int64_t(r) * n + i];
      if (op == ReduceOp::kSum) {
        acc = acc + x;
      } else if (std::isnan(acc) || std::isnan(x)) {
        acc = std::isnan(acc) ? acc : x;
      } else {
        acc = x > acc ? x : acc;
      }
    }
    out[i] = acc;
  }
}

void reduce_blocks(void* out, const void* blocks, int64_t n, int world, DType dtype, ReduceOp op) {
  if (dtype == DType::kF32) {
    reduce_blocks_in_rank_order(static_cast<float*>(out), static_cast<const float*>(blocks), n,
                                world, op);
  } else {
    reduce_blocks_in_rank_order(static_cast<double*>(out), static_cast<const double*>(blocks), n,
                                world, op);
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent) {
  mpi_ensure_initialized();
  greet_every_peer(parent);
  FARTHING_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  FARTHING_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  FARTHING_MPI_CHECK(MPI_Comm_rank(comm_, &topology_.rank));
  FARTHING_MPI_CHECK(MPI_Comm_size(comm_, &topology_.world_size));
  MPI_Comm local = MPI_COMM_NULL;
  FARTHING_MPI_CHECK(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, topology_.rank, MPI_INFO_NULL, &local));
  FARTHING_MPI_CHECK(MPI_Comm_rank(local, &topology_.local_rank));
  FARTHING_MPI_CHECK(MPI_Comm_size(local, &topology_.local_size));
  FARTHING_MPI_CHECK(MPI_Comm_free(&local));
  int node_leader = topology_.local_rank == 0 ? 1 : 0;
  FARTHING_MPI_CHECK(
      MPI_Allreduce(&node_leader, &topology_.node_count, 1, MPI_INT, MPI_SUM, comm_));
  if (mpi_thread_level() == MPI_THREAD_MULTIPLE) {
    worker_ = std::make_unique<Worker>();
    // A world of one has nobody to wait for, and needs no responder thread.
    if (topology_.world_size > 1) roll_call_ = std::make_unique<RollCall>(comm_, [this] { return issued_.load(); });
  }
}

std::string MpiCommunicator::absent_ranks(int64_t needed) const {
  // Long enough for an answer over a congested link, short next to any collective timeout.
  constexpr double kGraceS = 2.0;
  if (!roll_call_) return topology_.world_size > 1 ? no_roll_call_clause() : "no other rank to wait for";
  return describe_absent_ranks(roll_call_->ask(kGraceS), needed, kGraceS);
}

MpiCommunicator::~MpiCommunicator() {
  const bool unwinding = std::uncaught_exceptions() > 0;
  if (unwinding && worker_ && worker_->busy()) {
    // An error is unwinding past collectives still in flight; a peer may never join them
    // (it waits for this rank elsewhere), so waiting here could hang the job before the tool
    // reports the error and aborts (abort_on_error.h). Leave the worker behind instead.
    worker_.release()->abandon();
    return;
  }
  worker_.reset();  // finishes pending ops
  roll_call_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Comm_free is collective; while an error unwinds on this rank alone, skip it (a leak on
  // the way to MPI_Abort) rather than risk waiting for peers.
  if (!finalized && !unwinding && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

CommHandle MpiCommunicator::submit(std::function<void()> body, CollectiveName what, std::vector<Buffer> temporaries) {
  auto task = std::make_shared<Worker::Task>(std::move(body), what, ++issued_, timeout_s_, std::move(temporaries), this);
  if (worker_) {
    worker_->push(task);
  } else {
    task->run();
  }
  return CommHandle(task);
}

CommHandle MpiCommunicator::all_gather_async(const Tensor& out, const Tensor& in) {
  check_all_gather_args(*this, out, in);
  const int count = mpi_count(in.numel(), in.dtype(), "all_gather");
  const MPI_Datatype type = mpi_element(in.dtype()).type;
  const void* slot = static_cast<const char*>(out.data()) + size_t(rank()) * in.nbytes();
  const void* send = in.data() == slot ? MPI_IN_PLACE : in.data();
  MPI_Comm comm = comm_;
  void* recv = out.data();
  return submit([=] {
    if (count == 0) return;
    FARTHING_MPI_CHECK(MPI_Allgather(send, count, type, recv, count, type, comm));
  }, CollectiveName("all_gather", in));
}

CommHandle MpiCommunicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_reduce_scatter_args(*this, out, in, op);
  const int count = mpi_count(out.numel(), out.dtype(), "reduce_scatter");
  mpi_count(in.numel(), in.dtype(), "reduce_scatter");
  const MPI_Datatype type = mpi_element(in.dtype()).type;
  const DType dtype = in.dtype();
  const int world = world_size();
  MPI_Comm comm = comm_;
  const void* send = in.data();
  void* recv = out.data();
  const int64_t n = out.numel();
  const size_t block_bytes = out.nbytes();
  const bool native = !is_float(dtype) || (op == ReduceOp::kSum && order_ == ReduceOrder::kNative);
  std::vector<Buffer> temporaries;
  if (!native && count > 0) temporaries.emplace_back(Device::cpu(), block_bytes * size_t(world), MemoryCategory::kCommBuffers);
  void* blocks = temporaries.empty() ? nullptr : temporaries[0].data();
  return submit([=] {
    if (count == 0) return;
    if (native) {
      FARTHING_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, count, type, native_op(op), comm));
      return;
    }
    FARTHING_MPI_CHECK(MPI_Alltoall(send, count, type, blocks, count, type, comm));
    reduce_blocks(recv, blocks, n, world, dtype, op);
  }, CollectiveName("reduce_scatter", in), std::move(temporaries));
}

CommHandle MpiCommunicator::all_reduce_async(const Tensor& inout, ReduceOp op) {
  check_all_reduce_args(*this, inout, op);
  const int count = mpi_count(inout.numel(), inout.dtype(), "all_reduce");
  const MPI_Datatype type = mpi_element(inout.dtype()).type;
  const DType dtype = inout.dtype();
  const int world = world_size();
  const int me = rank();
  MPI_Comm comm = comm_;
  void* data = inout.data();
  const int64_t total = inout.numel();
  const bool native = !is_float(dtype) || (op == ReduceOp::kSum && order_ == ReduceOrder::kNative);
  // Rank r owns elements [r*n, (r+1)*n) of the zero-padded vector.
  const int64_t n = (total + world - 1) / world;
  const size_t elem = dtype_size_bytes(dtype);
  const size_t padded_bytes = size_t(n) * size_t(world) * elem;
  std::vector<Buffer> temporaries;
  if (!native && count > 0 && world > 1) {
    temporaries.emplace_back(Device::cpu(), padded_bytes, MemoryCategory::kCommBuffers);  // padded
    temporaries.emplace_back(Device::cpu(), padded_bytes, MemoryCategory::kCommBuffers);  // blocks
  }
  void* padded = temporaries.empty() ? nullptr : temporaries[0].data();
  void* blocks = temporaries.empty() ? nullptr : temporaries[1].data();
  return submit([=] {
    if (count == 0) return;
    if (native) {
      FARTHING_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, type, native_op(op), comm));
      return;
    }
    if (world == 1) return;
    std::memcpy(padded, data, size_t(total) * elem);
    std::memset(static_cast<char*>(padded) + size_t(total) * elem, 0, padded_bytes - size_t(total) * elem);
    const int block_count = mpi_count(n, dtype, "all_reduce");
    FARTHING_MPI_CHECK(MPI_Alltoall(padded, block_count, type, blocks, block_count, type, comm));
    void* mine = static_cast<char*>(padded) + size_t(me) * size_t(n) * elem;
    reduce_blocks(mine, blocks, n, world, dtype, op);
    FARTHING_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, block_count, type, padded, block_count, type, comm));
    std::memcpy(data, padded, size_t(total) * elem);
  }, CollectiveName("all_reduce", inout), std::move(temporaries));
}

CommHandle MpiCommunicator::broadcast_async(const Tensor& inout, int root) {
  check_broadcast_args(*this, inout, root);
  const int count = mpi_count(inout.numel(), inout.dtype(), "broadcast");
  const MPI_Datatype type = mpi_element(inout.dtype()).type;
  MPI_Comm comm = comm_;
  void* data = inout.data();
  return submit([=] {
    if (count == 0) return;
    FARTHING_MPI_CHECK(MPI_Bcast(data, count, type, root, comm));
  }, CollectiveName("broadcast", inout));
}

CommHandle MpiCommunicator::barrier_async() {
  MPI_Comm comm = comm_;
  return submit([=] { FARTHING_MPI_CHECK(MPI_Barrier(comm)); }, "barrier");
}

std::unique_ptr<MpiCommunicator> make_world_communicator() {
  mpi_ensure_initialized();
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

}  // namespace farthing

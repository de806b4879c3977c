// nccl_communicator.cu — see nccl_communicator.h.
#include "framework/dist/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/dist/collective_watchdog.h"
#include "framework/dist/nccl_check.h"
#include "kernels/cuda/cuda_check.h"

namespace farthing {

namespace {

// Narrow floats travel as bytes (gathers and broadcasts only: check_reducible keeps them out
// of reductions), so NCCL never sees a bf16 reduction.
struct NcclElement {
  ncclDataType_t type;
  size_t per_element;
};

NcclElement nccl_element(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {ncclFloat32, 1};
    case DType::kF64: return {ncclFloat64, 1};
    case DType::kI32: return {ncclInt32, 1};
    case DType::kI64: return {ncclInt64, 1};
    case DType::kU8: return {ncclUint8, 1};
    default: return {ncclUint8, dtype_size_bytes(dtype)};
  }
}

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF64; }

ncclRedOp_t native_op(ReduceOp op) { return op == ReduceOp::kSum ? ncclSum : ncclMax; }

// NOTE: the same operation order as reduce_blocks_in_rank_order in mpi_communicator.cpp:
// ranks 0..N-1 in order, one rounding per addition (the file is compiled with -fmad=false and
// there is no multiply to contract), max keeps the first NaN it meets.
template <class T>
__global__ void reduce_blocks_kernel(T* out, const T* blocks, int64_t n, int world, int is_max) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    T acc = blocks[i];
    for (int r = 1; r < world; ++r) {
      const T x = blocks[int64_t(r) * n + i];
      if (!is_max) {
        acc = acc + x;
      } else if (isnan(acc) || isnan(x)) {
        acc = isnan(acc) ? acc : x;
      } else {
        acc = x > acc ? x : acc;
      }
    }
    out[i] = acc;
  }
}

void launch_reduce_blocks(void* out, const void* blocks, int64_t n, int world, DType dtype,
                          ReduceOp op, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t wanted = (n + kThreads - 1) / kThreads;
  const int grid = int(wanted < 4096 ? wanted : 4096);
  const int is_max = op == ReduceOp::kMax ? 1 : 0;
  if (dtype == DType::kF32) {
    reduce_blocks_kernel<float><<<grid, kThreads, 0, stream>>>(
        static_cast<float*>(out), static_cast<const float*>(blocks), n, world, is_max);
  } else {
    reduce_blocks_kernel<double><<<grid, kThreads, 0, stream>>>(
        static_cast<double*>(out), static_cast<const double*>(blocks), n, world, is_max);
  }
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

// How a timeout names an op: what it is, and its number on this communicator.
struct OpName {
  CollectiveName what;
  int64_t number = 0;
  double timeout_s = 0.0;  // > 0: wait() gives up after this long
};

// The event recorded after an op on the communicator's stream, shared by its handle and, once
// the op is ordered on the device, the watchdog that polls it.
using SharedEvent = std::shared_ptr<CUevent_st>;

SharedEvent make_shared_event(cudaEvent_t event) {
  return SharedEvent(event, [](cudaEvent_t e) { cudaEventDestroy(e); });
}

// Where an op's handle may hand it: the stream that computes next, and the watchdog.
struct DeviceOrder {
  cudaStream_t compute = nullptr;
  dist::CollectiveWatchdog* watchdog = nullptr;
};

class NcclOp final : public CommHandle::Op {
 public:
  NcclOp(int device, SharedEvent done, ncclComm_t comm, std::vector<Buffer> temporaries, OpName name,
         DeviceOrder order)
      : device_(device), done_(std::move(done)), comm_(comm), temporaries_(std::move(temporaries)),
        name_(std::move(name)), order_(order) {}
  // Temporaries are freed after this, in the compute stream's order (cudaFreeAsync): a handle is
  // only destroyed after wait() (CommHandle waits in its destructor) or after wait_on_device()
  // queued the compute stream's wait for the op, so nothing later on that stream can reuse them
  // while the op reads them.
  ~NcclOp() override = default;
  bool test() override {
    if (cudaSetDevice(device_) != cudaSuccess) return true;  // wait() reports the error
    const cudaError_t state = cudaEventQuery(done_.get());
    if (state == cudaErrorNotReady) return false;
    return true;
  }
  void wait_on_device() override {
    FARTHING_CUDA_CHECK(cudaSetDevice(device_));
    FARTHING_CUDA_CHECK(cudaStreamWaitEvent(order_.compute, done_.get(), 0));
    temporaries_.clear();  // see the destructor: freed behind the wait just queued
    if (order_.watchdog == nullptr) return;
    // No host wait will look at this op: the watchdog polls its event and NCCL's asynchronous
    // error, and ends the job on a failure or past the timeout.
    order_.watchdog->watch(
        [device = device_, done = done_, comm = comm_] {
          FARTHING_CUDA_CHECK(cudaSetDevice(device));
          ncclResult_t async_error = ncclSuccess;
          FARTHING_NCCL_CHECK(ncclCommGetAsyncError(comm, &async_error));
          FARTHING_NCCL_CHECK(async_error);
          const cudaError_t state = cudaEventQuery(done.get());
          if (state == cudaErrorNotReady) return false;
          FARTHING_CUDA_CHECK(state);
          return true;
        },
        name_.what, name_.number);
  }
  // The handle let go while an error unwinds (communicator.h). The op was queued on the GPU when it
  // was issued, so it cannot be kept from starting as the MPI worker's can; what must not happen
  // is its temporaries going back to the pool, where later work on the compute stream could get
  // them while the op (perhaps stuck on a lost peer) still reads them. They are let go of without
  // freeing: the job ends next (abort_on_error.h), and with it the process's memory.
  void abandon() override {
    new std::vector<Buffer>(std::move(temporaries_));  // NOTE: leaked on purpose (see above)
  }
  void wait() override {
    FARTHING_CUDA_CHECK(cudaSetDevice(device_));
    if (name_.timeout_s <= 0.0) {
      FARTHING_CUDA_CHECK(cudaEventSynchronize(done_.get()));
    } else {
      // Poll the event and NCCL's asynchronous error (a peer's failure shows there) until the
      // deadline; the error then ends the job (abort_on_error.h), which frees the stuck kernels.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(name_.timeout_s);
      for (;;) {
        const cudaError_t state = cudaEventQuery(done_.get());
        if (state != cudaErrorNotReady) {
          FARTHING_CUDA_CHECK(state);
          break;
        }
        ncclResult_t async_error = ncclSuccess;
        FARTHING_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async_error));
        FARTHING_NCCL_CHECK(async_error);
        FARTHING_CHECK(std::chrono::steady_clock::now() < deadline,
                       collective_timeout_message(name_.what, name_.number, name_.timeout_s));
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    ncclResult_t async_error = ncclSuccess;
    FARTHING_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async_error));
    FARTHING_NCCL_CHECK(async_error);
  }

 private:
  int device_;
  SharedEvent done_;
  ncclComm_t comm_;
  std::vector<Buffer> temporaries_;
  OpName name_;
  DeviceOrder order_;
};

}  // namespace

struct NcclCommunicator::Impl {
  int device = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;  // recorded on the compute stream before each op
  // Polls the ops ordered on the device (wait_on_device); reset before comm is destroyed.
  std::unique_ptr<dist::CollectiveWatchdog> watchdog;

  // Orders the next op after the compute stream's earlier work. NOTE: an op's temporaries come
  // from the pool on the compute stream (cudaMallocAsync), so they are allocated before this:
  // the op's stream then waits for their allocation too.
  void begin(int device, void* compute) const;
  // The op's handle: an event after it on the op's stream, and what wait_on_device needs.
  CommHandle finish(int device, void* compute, std::vector<Buffer> temporaries, OpName name) const;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  // Frees what the constructor made so far, so a constructor that throws halfway (a failed
  // stream or event creation after ncclCommInitRank) leaks nothing. Never throws: it also runs
  // while errors unwind.
  ~Impl() {
    if (device >= 0 && cudaSetDevice(device) == cudaSuccess && stream != nullptr) cudaStreamSynchronize(stream);
    watchdog.reset();  // its polls use comm
    if (comm != nullptr) ncclCommDestroy(comm);
    if (ready != nullptr) cudaEventDestroy(ready);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, int device_index)
    : impl_(std::make_unique<Impl>()), topology_(bootstrap.topology()), device_index_(device_index) {
  FARTHING_CHECK(bootstrap.device().is_cpu(), "NcclCommunicator: the bootstrap communicator must "
                 "move host buffers (an MpiCommunicator), got one for ", bootstrap.device().name());
  int device_count = 0;
  FARTHING_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  FARTHING_CHECK(device_index >= 0 && device_index < device_count, "NcclCommunicator: rank ",
                 topology_.rank, " asked for cuda:", device_index, " but ", device_count,
                 " device(s) are visible (pick local_rank % device_count, or set "
                 "CUDA_VISIBLE_DEVICES per rank)");
  ncclUniqueId id{};
  if (topology_.rank == 0) FARTHING_NCCL_CHECK(ncclGetUniqueId(&id));
  bootstrap.broadcast(Tensor(&id, DType::kU8, Shape{int64_t(sizeof id)}), 0);
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  impl_->device = device_index_;
  FARTHING_NCCL_CHECK(ncclCommInitRank(&impl_->comm, topology_.world_size, id, topology_.rank));
  FARTHING_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  FARTHING_CUDA_CHECK(cudaEventCreateWithFlags(&impl_->ready, cudaEventDisableTiming));
  impl_->watchdog = std::make_unique<dist::CollectiveWatchdog>(timeout_s_);
}

NcclCommunicator::~NcclCommunicator() = default;  // Impl's destructor frees the stream, event and comm

void NcclCommunicator::set_collective_timeout(double seconds) {
  timeout_s_ = seconds;
  impl_->watchdog->set_timeout(seconds);
}

namespace {

// blocks[r*n, (r+1)*n) <- rank r's send[me*n, (me+1)*n): an all-to-all of n-element blocks.
void all_to_all(const char* send, char* blocks, size_t n, size_t elem_bytes, NcclElement element,
                int me, int world, ncclComm_t comm, cudaStream_t stream) {
  const size_t block_bytes = n * elem_bytes;
  const size_t count = n * element.per_element;
  FARTHING_CUDA_CHECK(cudaMemcpyAsync(blocks + size_t(me) * block_bytes,
                                      send + size_t(me) * block_bytes, block_bytes,
                                      cudaMemcpyDeviceToDevice, stream));
  FARTHING_NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < world; ++r) {
    if (r == me) continue;
    FARTHING_NCCL_CHECK(ncclSend(send + size_t(r) * block_bytes, count, element.type, r, comm, stream));
    FARTHING_NCCL_CHECK(ncclRecv(blocks + size_t(r) * block_bytes, count, element.type, r, comm, stream));
  }
  FARTHING_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace

void NcclCommunicator::Impl::begin(int device, void* compute) const {
  FARTHING_CUDA_CHECK(cudaSetDevice(device));
  FARTHING_CUDA_CHECK(cudaEventRecord(ready, static_cast<cudaStream_t>(compute)));
  FARTHING_CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
}

CommHandle NcclCommunicator::Impl::finish(int device, void* compute, std::vector<Buffer> temporaries, OpName name) const {
  cudaEvent_t event = nullptr;
  FARTHING_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  SharedEvent done = make_shared_event(event);
  FARTHING_CUDA_CHECK(cudaEventRecord(done.get(), stream));
  const DeviceOrder order{static_cast<cudaStream_t>(compute), watchdog.get()};
  return CommHandle(std::make_shared<NcclOp>(device, std::move(done), comm, std::move(temporaries), std::move(name), order));
}

CommHandle NcclCommunicator::all_gather_async(const Tensor& out, const Tensor& in) {
  check_all_gather_args(*this, out, in);
  impl_->begin(device_index_, compute_stream_);
  const NcclElement element = nccl_element(in.dtype());
  if (in.numel() > 0) {
    FARTHING_NCCL_CHECK(ncclAllGather(in.data(), out.data(), size_t(in.numel()) * element.per_element,
                                      element.type, impl_->comm, impl_->stream));
  }
  return impl_->finish(device_index_, compute_stream_, {},
                   {CollectiveName("all_gather", in), ++issued_, timeout_s_});
}

CommHandle NcclCommunicator::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_reduce_scatter_args(*this, out, in, op);
  const NcclElement element = nccl_element(in.dtype());
  const size_t n = size_t(out.numel());
  const bool native = !is_float(in.dtype()) || (op == ReduceOp::kSum && order_ == ReduceOrder::kNative);
  std::vector<Buffer> temporaries;
  if (n > 0 && !native) temporaries.emplace_back(device(), in.nbytes(), MemoryCategory::kCommBuffers);
  impl_->begin(device_index_, compute_stream_);
  if (n > 0 && native) {
    FARTHING_NCCL_CHECK(ncclReduceScatter(in.data(), out.data(), n, element.type, native_op(op),
                                          impl_->comm, impl_->stream));
  } else if (n > 0) {
    const size_t elem = dtype_size_bytes(in.dtype());
    char* blocks = static_cast<char*>(temporaries.back().data());
    all_to_all(static_cast<const char*>(in.data()), blocks, n, elem, element, rank(), world_size(),
               impl_->comm, impl_->stream);
    launch_reduce_blocks(out.data(), blocks, int64_t(n), world_size(), in.dtype(), op,
                         impl_->stream);
  }
  return impl_->finish(device_index_, compute_stream_, std::move(temporaries),
                   {CollectiveName("reduce_scatter", in), ++issued_, timeout_s_});
}

CommHandle NcclCommunicator::all_reduce_async(const Tensor& inout, ReduceOp op) {
  check_all_reduce_args(*this, inout, op);
  const NcclElement element = nccl_element(inout.dtype());
  const int64_t total = inout.numel();
  const int world = world_size();
  const bool native = !is_float(inout.dtype()) || (op == ReduceOp::kSum && order_ == ReduceOrder::kNative);
  const bool ordered = total > 0 && !native && world > 1;
  // Rank r owns elements [r*n, (r+1)*n) of the zero-padded vector, as in the MPI path.
  const size_t elem = dtype_size_bytes(inout.dtype());
  const size_t n = size_t((total + world - 1) / world);
  const size_t padded_bytes = n * size_t(world) * elem;
  std::vector<Buffer> temporaries;
  if (ordered) {
    temporaries.emplace_back(device(), padded_bytes, MemoryCategory::kCommBuffers);
    temporaries.emplace_back(device(), padded_bytes, MemoryCategory::kCommBuffers);
  }
  impl_->begin(device_index_, compute_stream_);
  if (total > 0 && native) {
    FARTHING_NCCL_CHECK(ncclAllReduce(inout.data(), inout.data(), size_t(total), element.type,
                                      native_op(op), impl_->comm, impl_->stream));
  } else if (ordered) {
    char* padded = static_cast<char*>(temporaries[0].data());
    char* blocks = static_cast<char*>(temporaries[1].data());
    const size_t used_bytes = size_t(total) * elem;
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(padded, inout.data(), used_bytes, cudaMemcpyDeviceToDevice,
                                        impl_->stream));
    FARTHING_CUDA_CHECK(cudaMemsetAsync(padded + used_bytes, 0, padded_bytes - used_bytes,
                                        impl_->stream));
    all_to_all(padded, blocks, n, elem, element, rank(), world, impl_->comm, impl_->stream);
    char* mine = padded + size_t(rank()) * n * elem;
    launch_reduce_blocks(mine, blocks, int64_t(n), world, inout.dtype(), op, impl_->stream);
    FARTHING_NCCL_CHECK(ncclAllGather(mine, padded, n, element.type, impl_->comm, impl_->stream));
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(inout.data(), padded, used_bytes, cudaMemcpyDeviceToDevice,
                                        impl_->stream));
  }
  return impl_->finish(device_index_, compute_stream_, std::move(temporaries),
                   {CollectiveName("all_reduce", inout), ++issued_, timeout_s_});
}

CommHandle NcclCommunicator::broadcast_async(const Tensor& inout, int root) {
  check_broadcast_args(*this, inout, root);
  impl_->begin(device_index_, compute_stream_);
  const NcclElement element = nccl_element(inout.dtype());
  if (inout.numel() > 0) {
    FARTHING_NCCL_CHECK(ncclBroadcast(inout.data(), inout.data(),
                                      size_t(inout.numel()) * element.per_element, element.type,
                                      root, impl_->comm, impl_->stream));
  }
  return impl_->finish(device_index_, compute_stream_, {},
                   {CollectiveName("broadcast", inout), ++issued_, timeout_s_});
}

CommHandle NcclCommunicator::barrier_async() {
  // NCCL has no barrier: an all-reduce of one integer orders every rank behind every other.
  std::vector<Buffer> temporaries;
  temporaries.emplace_back(device(), sizeof(int32_t), MemoryCategory::kCommBuffers);
  impl_->begin(device_index_, compute_stream_);
  void* token = temporaries.back().data();
  FARTHING_CUDA_CHECK(cudaMemsetAsync(token, 0, sizeof(int32_t), impl_->stream));
  FARTHING_NCCL_CHECK(ncclAllReduce(token, token, 1, ncclInt32, ncclSum, impl_->comm, impl_->stream));
  return impl_->finish(device_index_, compute_stream_, std::move(temporaries), {"barrier", ++issued_, timeout_s_});
}

}  // namespace farthing

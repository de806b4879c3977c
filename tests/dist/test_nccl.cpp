// test_nccl.cpp — NcclCommunicator (CUDA builds) against MpiCommunicator on the same inputs:
// every collective must give bitwise the same result (the float reductions share the MPI path's
// rank order); and wait_on_device orders the compute stream after an op without a host wait.
// Exits 77 (skipped) on every rank when any rank lacks a GPU of its own (NCCL needs one device
// per rank: np=1 on a one-GPU machine runs; np=2 needs two GPUs).
// Relies on: framework/dist (MPI, NCCL), framework/backend (device buffers and copies).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/backend/cuda_backend.h"
#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/nccl_communicator.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

MpiCommunicator* g_mpi = nullptr;
NcclCommunicator* g_nccl = nullptr;

// Host vector -> device -> op on NCCL -> host, next to the same op on MPI with the host copy.
template <class T>
std::vector<T> on_device(const std::vector<T>& host, size_t out_elems,
                         const std::function<void(const Tensor& out, const Tensor& in)>& op) {
  const Device dev = g_nccl->device();
  Buffer in(dev, std::max<size_t>(host.size(), 1) * sizeof(T), MemoryCategory::kOther);
  Buffer out(dev, std::max<size_t>(out_elems, 1) * sizeof(T), MemoryCategory::kOther);
  Backend& backend = backend_for(dev);
  const Tensor in_t(in.data(), dtype_of<T>(), Shape{int64_t(host.size())}, dev);
  const Tensor out_t(out.data(), dtype_of<T>(), Shape{int64_t(out_elems)}, dev);
  std::vector<T> staging = host;
  backend.copy(in_t, Tensor(staging.data(), dtype_of<T>(), Shape{int64_t(host.size())}));
  op(out_t, in_t);
  std::vector<T> result(out_elems);
  backend.copy(Tensor(result.data(), dtype_of<T>(), Shape{int64_t(out_elems)}), out_t);
  return result;
}

template <class T>
std::vector<T> values(int64_t n, uint64_t salt) {
  test::SplitMix64 rng(salt * 31 + uint64_t(g_mpi->rank()));
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = T((rng.uniform() - 0.5f) * float(1 << (rng.next() % 20)));
    } else {
      const uint64_t bits = rng.next();
      std::memcpy(&x, &bits, sizeof x);
    }
  }
  return v;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(Nccl, AllReduceMatchesMpiBitwise) {
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(100003)}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      std::vector<float> host = values<float>(n, 1);
      std::vector<float> gpu = on_device(host, size_t(n), [&](const Tensor& out, const Tensor& in) {
        g_nccl->all_reduce(in, op);
        backend_for(in.device()).copy(out, in);
      });
      g_mpi->all_reduce(Tensor(host.data(), DType::kF32, Shape{n}), op);
      EXPECT_TRUE(same_bytes(gpu, host)) << "n=" << n << " " << reduce_op_name(op);
    }
    std::vector<int64_t> ints = values<int64_t>(n, 2);
    std::vector<int64_t> gpu = on_device(ints, size_t(n), [&](const Tensor& out, const Tensor& in) {
      g_nccl->all_reduce(in, ReduceOp::kSum);
      backend_for(in.device()).copy(out, in);
    });
    g_mpi->all_reduce(Tensor(ints.data(), DType::kI64, Shape{n}), ReduceOp::kSum);
    EXPECT_TRUE(same_bytes(gpu, ints)) << "i64 n=" << n;
  }
}

TEST(Nccl, ReduceScatterAndAllGatherMatchMpi) {
  const int w = g_mpi->world_size();
  const int64_t n = 4099;
  std::vector<float> host = values<float>(n * w, 3);
  std::vector<float> gpu = on_device(host, size_t(n), [&](const Tensor& out, const Tensor& in) {
    g_nccl->reduce_scatter(out, in, ReduceOp::kSum);
  });
  std::vector<float> expected(static_cast<size_t>(n));
  g_mpi->reduce_scatter(Tensor(expected.data(), DType::kF32, Shape{n}),
                        Tensor(host.data(), DType::kF32, Shape{n * w}), ReduceOp::kSum);
  EXPECT_TRUE(same_bytes(gpu, expected));
  std::vector<Bf16Bits> mine = values<Bf16Bits>(257, 4);
  std::vector<Bf16Bits> gathered = on_device(mine, size_t(257 * w), [&](const Tensor& out, const Tensor& in) {
    CommHandle h = g_nccl->all_gather_async(out, in);
    h.wait();
  });
  std::vector<Bf16Bits> golden(size_t(257 * w));
  g_mpi->all_gather(Tensor(golden.data(), DType::kBF16, Shape{257 * w}),
                    Tensor(mine.data(), DType::kBF16, Shape{257}));
  EXPECT_TRUE(same_bytes(gathered, golden));
}

TEST(Nccl, BroadcastAndBarrier) {
  std::vector<double> host = values<double>(77, 5);
  std::vector<double> gpu = on_device(host, 77, [&](const Tensor& out, const Tensor& in) {
    g_nccl->broadcast(in, g_mpi->world_size() - 1);
    backend_for(in.device()).copy(out, in);
  });
  g_mpi->broadcast(Tensor(host.data(), DType::kF64, Shape{77}), g_mpi->world_size() - 1);
  EXPECT_TRUE(same_bytes(gpu, host));
  g_nccl->barrier();
  std::vector<Bf16Bits> narrow(4);
  EXPECT_THROW(on_device(narrow, 4, [&](const Tensor&, const Tensor& in) { g_nccl->all_reduce(in, ReduceOp::kSum); }),
               Error);
}

TEST(Nccl, WaitOnDeviceOrdersTheComputeStream) {
  // The gathered values are copied out on the compute stream right after wait_on_device, with no
  // host wait for the gather: only the compute stream's wait for the op's event puts the copy
  // after it. A copy that overtook the gather would read the NaN fill (64 MiB per rank, so the
  // race would be wide).
  const Device dev = g_nccl->device();
  Backend& backend = backend_for(dev);
  const int64_t n = int64_t(1) << 24;
  const int64_t w = g_mpi->world_size();
  std::vector<float> mine = values<float>(n, 6);
  Buffer in(dev, size_t(n) * 4, MemoryCategory::kOther);
  Buffer out(dev, size_t(n * w) * 4, MemoryCategory::kOther);
  const Tensor in_t = in.view(DType::kF32, Shape{n});
  const Tensor out_t = out.view(DType::kF32, Shape{n * w});
  backend.copy(in_t, Tensor(mine.data(), DType::kF32, Shape{n}));
  backend.fill_bytes(out.data(), 0xFF, out.bytes());  // NaN, on the compute stream
  CommHandle handle = g_nccl->all_gather_async(out_t, in_t);
  handle.wait_on_device();
  std::vector<float> result(size_t(n * w));
  backend.copy(Tensor(result.data(), DType::kF32, Shape{n * w}), out_t);  // waits for the compute stream only
  std::vector<float> golden(size_t(n * w));
  g_mpi->all_gather(Tensor(golden.data(), DType::kF32, Shape{n * w}), Tensor(mine.data(), DType::kF32, Shape{n}));
  EXPECT_TRUE(same_bytes(result, golden));
}

}  // namespace
}  // namespace farthing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto mpi = farthing::make_world_communicator();
  const int devices = farthing::cuda_device_count();
  int32_t missing = devices == 0 || mpi->local_size() > devices ? 1 : 0;
  mpi->all_reduce(farthing::Tensor(&missing, farthing::DType::kI32, {1}), farthing::ReduceOp::kMax);
  if (missing != 0) {
    if (mpi->rank() == 0) {
      std::printf("skipped: NCCL needs one GPU per rank (%d visible here, %d ranks per node)\n",
                  devices, mpi->local_size());
    }
    return 77;
  }
  int failed = 0;
  {
    farthing::NcclCommunicator nccl(*mpi, mpi->local_rank() % devices);
    // The backend's stream is the compute stream, as in training (device_communicator.cpp).
    nccl.set_compute_stream(static_cast<farthing::CudaBackend&>(farthing::backend_for(nccl.device())).stream());
    farthing::g_mpi = mpi.get();
    farthing::g_nccl = &nccl;
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    int32_t any = failed;
    mpi->all_reduce(farthing::Tensor(&any, farthing::DType::kI32, {1}), farthing::ReduceOp::kMax);
    failed = any;
  }
  return failed;
}

// device_communicator.cpp — see device_communicator.h.
#include "framework/dist/device_communicator.h"

#include "framework/dist/staged_communicator.h"
#if defined(FARTHING_WITH_CUDA)
#include "framework/backend/cuda_backend.h"
#include "framework/dist/nccl_communicator.h"
#endif

namespace farthing::dist {

DeviceCommunicator make_device_communicator(Communicator& host, Backend& backend) {
  const Device device = backend.device();
  if (device.is_cpu()) return {nullptr, "mpi"};
  // NCCL needs one GPU per rank: ranks on a node must not outnumber its visible GPUs.
  int64_t nccl_ok = device.kind == DeviceKind::kCuda && host.world_size() > 1 &&
                    host.local_size() <= visible_cuda_devices();
  host.all_reduce(Tensor(&nccl_ok, DType::kI64, Shape{1}), ReduceOp::kSum);
  if (nccl_ok == host.world_size()) {
#if defined(FARTHING_WITH_CUDA)
    auto nccl = std::make_unique<NcclCommunicator>(host, device.index);
    nccl->set_compute_stream(static_cast<CudaBackend&>(backend).stream());
    return {std::move(nccl), "nccl"};
#endif
  }
  return {std::make_unique<StagedCommunicator>(host, backend), "mpi (staged through the host)"};
}

}  // namespace farthing::dist

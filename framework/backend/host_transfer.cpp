// host_transfer.cpp — see host_transfer.h: the synchronous transfer (CPU) and the factory.
#include "framework/backend/host_transfer.h"

#include "framework/backend/strict_host_transfer.h"
#include "framework/core/error.h"

namespace farthing {

#if defined(FARTHING_WITH_CUDA)
std::unique_ptr<HostTransfer> make_cuda_host_transfer(Backend& backend);  // cuda_host_transfer.cu
#endif

namespace {

// Every copy is Backend::copy, done when it returns: tickets are only counted.
class SyncHostTransfer final : public HostTransfer {
 public:
  explicit SyncHostTransfer(Backend& backend) : backend_(backend) {}
  void* allocate_host(size_t bytes, MemoryCategory category) override {
    void* data = backend_for(Device::cpu()).allocate_bytes(bytes);
    memory_tracker(Device::cpu()).on_allocate(category, int64_t(bytes));
    return data;
  }
  void free_host(void* data, size_t bytes, MemoryCategory category) override {
    if (data == nullptr) return;
    backend_for(Device::cpu()).free_bytes(data);
    memory_tracker(Device::cpu()).on_free(category, int64_t(bytes));
  }
  Ticket to_host(void* host_dst, const Tensor& device_src) override {
    backend_.copy(Tensor(host_dst, device_src.dtype(), device_src.shape(), Device::cpu()), device_src);
    return ++issued_;
  }
  Ticket to_device(const Tensor& device_dst, const void* host_src) override {
    backend_.copy(device_dst, Tensor(const_cast<void*>(host_src), device_dst.dtype(), device_dst.shape(), Device::cpu()));
    return ++issued_;
  }
  void order_device_after_copies() override {}
  void wait(Ticket ticket) override {
    FARTHING_CHECK(ticket <= issued_, "host transfer: waiting for copy ", ticket, " but only ", issued_,
                   " were issued");
  }
  // The copies are the host's own time: no device clock.
  Timer start_timer() override { return -1; }
  void stop_timer(Timer) override {}
  double timer_seconds(Timer) override { return -1.0; }
  void release_timers() override {}

 private:
  Backend& backend_;
  Ticket issued_ = 0;
};

}  // namespace

std::unique_ptr<HostTransfer> make_host_transfer(Backend& backend) {
#if defined(FARTHING_WITH_CUDA)
  if (backend.device().kind == DeviceKind::kCuda) return make_cuda_host_transfer(backend);
#endif
  if (backend.device().kind == DeviceKind::kStrict) return make_strict_host_transfer(backend);
  return std::make_unique<SyncHostTransfer>(backend);
}

}  // namespace farthing

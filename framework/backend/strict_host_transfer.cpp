// strict_host_transfer.cpp — see strict_host_transfer.h.
#include "framework/backend/strict_host_transfer.h"

#include <cstddef>
#include <cstring>
#include <deque>
#include <vector>

#include "framework/core/error.h"

namespace farthing {

namespace {

constexpr uint8_t kPoison = 0xFF;  // NaN in every float format a copy moves

bool overlaps(const Tensor& a, const Tensor& b) {
  const auto* a0 = static_cast<const std::byte*>(a.data());
  const auto* b0 = static_cast<const std::byte*>(b.data());
  return a.nbytes() > 0 && b.nbytes() > 0 && a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

class StrictHostTransfer final : public HostTransfer {
 public:
  explicit StrictHostTransfer(Backend& device) : device_(device) {}
  // Copies still queued are dropped: the ring orders every copy back before the device reads the
  // weights again (finish_step), so only a step that failed leaves any, and landing them here could
  // write device memory already freed.
  ~StrictHostTransfer() override = default;

  void* allocate_host(size_t bytes, MemoryCategory category) override {
    void* data = backend_for(Device::cpu()).allocate_bytes(bytes);
    memory_tracker(Device::cpu()).on_allocate(category, int64_t(bytes));
    return data;
  }
  void free_host(void* data, size_t bytes, MemoryCategory category) override {
    if (data == nullptr) return;
    // Queued copies out of this memory keep what it holds; copies into it are dropped (no one
    // can read it any more).
    const Tensor freed(data, DType::kU8, Shape{int64_t(bytes)}, Device::cpu());
    for (Copy& queued : queue_) {
      if (!queued.is_staged && overlaps(queued.src, freed)) stage(queued);
    }
    std::erase_if(queue_, [&](const Copy& c) { return overlaps(c.dst, freed); });
    backend_for(Device::cpu()).free_bytes(data);
    memory_tracker(Device::cpu()).on_free(category, int64_t(bytes));
  }
  Ticket to_host(void* host_dst, const Tensor& device_src) override {
    return issue(Tensor(host_dst, device_src.dtype(), device_src.shape(), Device::cpu()), device_src);
  }
  Ticket to_device(const Tensor& device_dst, const void* host_src) override {
    return issue(device_dst, Tensor(const_cast<void*>(host_src), device_dst.dtype(), device_dst.shape(), Device::cpu()));
  }
  void order_device_after_copies() override { land(issued_); }
  void wait(Ticket ticket) override {
    FARTHING_CHECK(ticket <= issued_, "host transfer: waiting for copy ", ticket, " but only ", issued_,
                   " were issued");
    land(ticket);
  }
  // No device clock: the copies are the host's own time.
  Timer start_timer() override { return -1; }
  void stop_timer(Timer) override {}
  double timer_seconds(Timer) override { return -1.0; }
  void release_timers() override {}

 private:
  struct Copy {
    Ticket ticket = 0;
    Tensor dst, src;
    std::vector<std::byte> staged;  // src's bytes, once a later copy overwrote src
    bool is_staged = false;
  };

  Ticket issue(const Tensor& dst, const Tensor& src) {
    FARTHING_CHECK(dst.is_contiguous() && src.is_contiguous() && dst.nbytes() == src.nbytes(),
                   "host transfer: copies are contiguous and of one size, got ", dst.describe(), " <- ",
                   src.describe());
    for (Copy& queued : queue_) {
      if (!queued.is_staged && overlaps(queued.src, dst)) stage(queued);
    }
    poison(dst);
    queue_.push_back(Copy{++issued_, dst, src, {}, false});
    return issued_;
  }
  // The source's bytes as they are now, on the host.
  void stage(Copy& c) {
    c.staged.resize(c.src.nbytes());
    const Tensor host(c.staged.data(), c.src.dtype(), c.src.shape(), Device::cpu());
    if (c.src.device().is_cpu()) std::memcpy(c.staged.data(), c.src.data(), c.src.nbytes());
    else device_.copy(host, c.src);
    c.is_staged = true;
  }
  void poison(const Tensor& dst) {
    if (dst.device().is_cpu()) std::memset(dst.data(), kPoison, dst.nbytes());
    else device_.fill_bytes(dst.data(), kPoison, dst.nbytes());
  }
  // Every queued copy up to `ticket`, in issue order.
  void land(Ticket ticket) {
    while (!queue_.empty() && queue_.front().ticket <= ticket) {
      Copy& c = queue_.front();
      if (!c.is_staged) {
        device_.copy(c.dst, c.src);
      } else if (c.dst.device().is_cpu()) {
        std::memcpy(c.dst.data(), c.staged.data(), c.dst.nbytes());
      } else {
        device_.copy(c.dst, Tensor(c.staged.data(), c.dst.dtype(), c.dst.shape(), Device::cpu()));
      }
      queue_.pop_front();
    }
  }

  Backend& device_;
  Ticket issued_ = 0;
  std::deque<Copy> queue_;
};

}  // namespace

std::unique_ptr<HostTransfer> make_strict_host_transfer(Backend& device) {
  return std::make_unique<StrictHostTransfer>(device);
}

}  // namespace farthing

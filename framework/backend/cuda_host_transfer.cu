// cuda_host_transfer.cu — HostTransfer on a GPU (host_transfer.h): pinned host buffers and
// cudaMemcpyAsync on a copy stream of its own.
//
// to_host records an event on the compute stream and makes the copy stream wait for it, so the
// copy reads what every op queued so far wrote; order_device_after_copies makes the compute
// stream wait for the last copy's event, so the ops queued after it read the new values (until
// then the copies back run beside the compute stream's work). Every copy records an event on
// the copy stream (its ticket); wait(ticket) synchronises on it. A timer is a pair of timing
// events recorded on the copy stream around a group of copies (the others are created with
// cudaEventDisableTiming, which is cheaper): cudaEventElapsedTime gives the device's own time of
// the group, read once its stop event has completed.
// Relies on: cuda_backend.h (the compute stream), kernels/cuda/cuda_check.h. Not run on a GPU yet;
// compiled for sm_90 by the CUDA build.
#include <cuda_runtime_api.h>

#include <deque>
#include <utility>
#include <vector>

#include "framework/backend/cuda_backend.h"
#include "framework/backend/host_transfer.h"
#include "framework/core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace farthing {

namespace {

class CudaHostTransfer final : public HostTransfer {
 public:
  explicit CudaHostTransfer(CudaBackend& backend)
      : backend_(backend), compute_(static_cast<cudaStream_t>(backend.stream())) {
    FARTHING_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  }
  ~CudaHostTransfer() override {
    cudaStreamSynchronize(copy_);
    for (auto& [ticket, event] : in_flight_) cudaEventDestroy(event);
    for (cudaEvent_t event : free_events_) cudaEventDestroy(event);
    release_timers();
    for (cudaEvent_t event : free_timing_events_) cudaEventDestroy(event);
    cudaStreamDestroy(copy_);
  }
  CudaHostTransfer(const CudaHostTransfer&) = delete;
  CudaHostTransfer& operator=(const CudaHostTransfer&) = delete;

  void* allocate_host(size_t bytes, MemoryCategory category) override {
    void* data = nullptr;
    FARTHING_CUDA_CHECK(cudaHostAlloc(&data, bytes, cudaHostAllocDefault));
    memory_tracker(Device::cpu()).on_allocate(category, int64_t(bytes));
    return data;
  }
  void free_host(void* data, size_t bytes, MemoryCategory category) override {
    if (data == nullptr) return;
    cudaStreamSynchronize(copy_);  // no copy may still read or write it
    cudaFreeHost(data);
    memory_tracker(Device::cpu()).on_free(category, int64_t(bytes));
  }

  Ticket to_host(void* host_dst, const Tensor& device_src) override {
    FARTHING_CHECK(device_src.device() == backend_.device() && device_src.is_contiguous(),
                   "host transfer: to_host needs a contiguous ", backend_.device().name(), " tensor, got ",
                   device_src.describe());
    cudaEvent_t produced = take_event();
    FARTHING_CUDA_CHECK(cudaEventRecord(produced, compute_));
    FARTHING_CUDA_CHECK(cudaStreamWaitEvent(copy_, produced, 0));
    free_events_.push_back(produced);  // reusable: the wait above captured it
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src.data(), device_src.nbytes(), cudaMemcpyDeviceToHost, copy_));
    return record_copy();
  }

  Ticket to_device(const Tensor& device_dst, const void* host_src) override {
    FARTHING_CHECK(device_dst.device() == backend_.device() && device_dst.is_contiguous(),
                   "host transfer: to_device needs a contiguous ", backend_.device().name(), " tensor, got ",
                   device_dst.describe());
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(device_dst.data(), host_src, device_dst.nbytes(), cudaMemcpyHostToDevice, copy_));
    return record_copy();
  }

  void order_device_after_copies() override {
    if (in_flight_.empty()) {  // every copy was waited for by the host already
      return;
    }
    FARTHING_CUDA_CHECK(cudaStreamWaitEvent(compute_, in_flight_.back().second, 0));
  }

  Timer start_timer() override {
    timers_.push_back({take_timing_event(), nullptr});
    FARTHING_CUDA_CHECK(cudaEventRecord(timers_.back().start, copy_));
    return Timer(timers_.size() - 1);
  }

  void stop_timer(Timer timer) override {
    TimerEvents& t = timer_at(timer);
    FARTHING_CHECK(t.stop == nullptr, "host transfer: timer ", timer, " was stopped already");
    t.stop = take_timing_event();
    FARTHING_CUDA_CHECK(cudaEventRecord(t.stop, copy_));
  }

  double timer_seconds(Timer timer) override {
    const TimerEvents& t = timer_at(timer);
    FARTHING_CHECK(t.stop != nullptr, "host transfer: timer ", timer, " is read before it was stopped");
    FARTHING_CUDA_CHECK(cudaEventSynchronize(t.stop));
    float ms = 0.0f;
    FARTHING_CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
    return double(ms) * 1e-3;
  }

  void release_timers() override {
    for (const TimerEvents& t : timers_) {
      for (cudaEvent_t e : {t.start, t.stop}) {
        if (e != nullptr) free_timing_events_.push_back(e);  // reusable: recording again resets it
      }
    }
    timers_.clear();
  }

  void wait(Ticket ticket) override {
    FARTHING_CHECK(ticket <= issued_, "host transfer: waiting for copy ", ticket, " but only ", issued_, " were issued");
    while (!in_flight_.empty() && in_flight_.front().first <= ticket) {
      const auto [t, event] = in_flight_.front();
      if (t == ticket) FARTHING_CUDA_CHECK(cudaEventSynchronize(event));
      in_flight_.pop_front();
      free_events_.push_back(event);
    }
  }

 private:
  // A free event of `pool`, or a new one made with `flags`.
  static cudaEvent_t take_from(std::vector<cudaEvent_t>& pool, unsigned flags) {
    if (!pool.empty()) {
      cudaEvent_t e = pool.back();
      pool.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    FARTHING_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return e;
  }
  cudaEvent_t take_event() { return take_from(free_events_, cudaEventDisableTiming); }
  cudaEvent_t take_timing_event() { return take_from(free_timing_events_, cudaEventDefault); }
  struct TimerEvents {
    cudaEvent_t start = nullptr, stop = nullptr;
  };
  TimerEvents& timer_at(Timer timer) {
    FARTHING_CHECK(timer >= 0 && size_t(timer) < timers_.size(), "host transfer: timer ", timer, " does not exist (",
                   timers_.size(), " started since the last release)");
    return timers_[size_t(timer)];
  }
  Ticket record_copy() {
    FARTHING_CUDA_CHECK(cudaGetLastError());
    cudaEvent_t done = take_event();
    FARTHING_CUDA_CHECK(cudaEventRecord(done, copy_));
    in_flight_.emplace_back(++issued_, done);
    return issued_;
  }

  CudaBackend& backend_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  std::deque<std::pair<Ticket, cudaEvent_t>> in_flight_;  // copies issued and not yet waited for, oldest first
  std::vector<cudaEvent_t> free_events_;
  std::vector<TimerEvents> timers_;  // started since the last release_timers(), by Timer
  std::vector<cudaEvent_t> free_timing_events_;
  Ticket issued_ = 0;
};

}  // namespace

std::unique_ptr<HostTransfer> make_cuda_host_transfer(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  FARTHING_CHECK(cuda != nullptr, "host transfer: ", backend.device().name(), " is not a CUDA backend");
  return std::make_unique<CudaHostTransfer>(*cuda);
}

}  // namespace farthing

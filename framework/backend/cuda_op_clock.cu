// cuda_op_clock.cu — the step profile's clock on a GPU: CUDA events on the backend's stream
// (op_profiler.h). A mark records an event where the stream is in its work order, so a span
// between two marks is the device's time for the work queued between them, whatever the host did
// meanwhile. collect() waits for the last event (the one host wait per step that profiling
// adds) and reads each event's time from the first. The events are made once and reused: a
// step's marks cost one cudaEventRecord each.
// Relies on: cuda_backend.h, kernels/cuda/cuda_check.h. Tested by: tests/train/loop/test_step_profile.cpp
// on the host clock; on a GPU by the GPU check (tools/gpu/check.sh), which prints each profile.
#include <cuda_runtime.h>

#include <vector>

#include "framework/backend/cuda_backend.h"
#include "framework/backend/op_profiler.h"
#include "kernels/cuda/cuda_check.h"

namespace farthing {

namespace {

class CudaEventClock final : public OpClock {
 public:
  explicit CudaEventClock(void* stream) : stream_(static_cast<cudaStream_t>(stream)) {}
  ~CudaEventClock() override {
    for (cudaEvent_t e : events_) static_cast<void>(cudaEventDestroy(e));
  }
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;

  uint32_t mark() override {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      FARTHING_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    FARTHING_CUDA_CHECK(cudaEventRecord(events_[used_], stream_));
    return uint32_t(used_++);
  }

  std::vector<double> collect() override {
    std::vector<double> seconds(used_, 0.0);
    if (used_ > 0) FARTHING_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0.0f;
      FARTHING_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
      seconds[i] = double(ms) * 1e-3;
    }
    used_ = 0;
    return seconds;
  }

 private:
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<OpClock> CudaBackend::make_op_clock() { return std::make_unique<CudaEventClock>(stream_); }

}  // namespace farthing

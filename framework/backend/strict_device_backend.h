// strict_device_backend.h — a test device: the CPU kernels, over memory the host may not touch.
//
// A GPU run fails wherever host code reads or writes device memory, or hands an op a host
// pointer. This backend makes both failures happen on a machine without a GPU:
//   - its buffers live in a GuardedArena, closed to the host except while one of its ops runs:
//     a stray host read or write crashes at once, naming the strict device;
//   - every op checks that each pointer it is given lies in the arena (and copy(), that each
//     tensor's device tag matches where its memory is), failing with the op's name otherwise.
// The results are the CPU backend's, bit for bit: the ops are CpuBackend's and CpuNnOps', run
// inside an access scope. Select it with train.device: strict (tests only).
// It also counts what would stall a GPU's host: each copy into host memory (a readback, which
// waits for the device), each synchronize(), and each allocation, telling apart those that
// memory freed earlier could not serve (the arena grew: on CUDA the stream-ordered pool would
// have to ask the driver), so that a test can hold a training step to its budget
// (tests/train/loop/test_step_host_waits.cpp).
// Relies on: cpu_backend.h, guarded_arena.h. Tested by: tests/backend/test_strict_device.cpp,
// tests/train/loop/test_train_strict_device.sh.
#pragma once

#include <atomic>
#include <cstdint>

#include "framework/backend/backend.h"
#include "framework/backend/cpu_backend.h"
#include "framework/backend/cpu_nn_ops.h"
#include "framework/backend/guarded_arena.h"
#include "framework/backend/strict_nn_ops.h"

namespace farthing {

class StrictDeviceBackend final : public Backend {
 public:
  StrictDeviceBackend();
  Device device() const override { return Device::strict(); }
  void* allocate_bytes(size_t bytes) override;
  void free_bytes(void* data) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void cast(const Tensor& dst, const Tensor& src, const CastOptions& options) override;
  void block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                      numerics::MapSign sign) override;
  void block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                        numerics::MapSign sign) override;
  void fill_bytes(void* dst, uint8_t value, size_t bytes) override;
  void adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) override;
  void grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) override;
  NnOps& nn() override { return nn_; }
  void synchronize() override { ++synchronizations_; }

  GuardedArena& arena() { return arena_; }

  // Since this backend was made (take differences around the code of interest).
  struct HostWaitCounts {
    int64_t readbacks = 0;         // copies into host memory
    int64_t synchronizations = 0;  // synchronize() calls
    int64_t allocations = 0;       // allocate_bytes() calls
    int64_t pool_growths = 0;      // of those, the ones no freed memory could serve
    int64_t waits() const { return readbacks + synchronizations; }
  };
  HostWaitCounts host_wait_counts() const {
    return HostWaitCounts{readbacks_.load(), synchronizations_.load(), allocations_.load(), pool_growths_.load()};
  }

 private:
  // The tensor, checked to be this device's memory, re-tagged as host memory for the CPU ops.
  Tensor on_host(const Tensor& t, const char* op) const;
  void check_device_pointer(const void* p, const char* op, const char* what) const;

  GuardedArena arena_;
  std::atomic<int64_t> readbacks_{0}, synchronizations_{0}, allocations_{0}, pool_growths_{0};
  CpuBackend cpu_;
  StrictNnOps nn_;
};

}  // namespace farthing

// device.h — where a buffer lives: the host, one CUDA device, or the strict test device.
//
// The strict device (backend/strict_device_backend.h) runs the CPU kernels over memory that host
// code may not touch: a run on it proves that the training path reaches device memory only
// through the backend, as a GPU run must, on a machine without a GPU.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <string>

namespace farthing {

enum class DeviceKind : unsigned char { kCpu, kCuda, kStrict };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCpu, 0}; }
  static Device cuda(int index) { return {DeviceKind::kCuda, index}; }
  static Device strict() { return {DeviceKind::kStrict, 0}; }
  // Host memory, which host code may read and write directly.
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool operator==(const Device&) const = default;
  std::string name() const {
    return kind == DeviceKind::kCpu ? "cpu" : kind == DeviceKind::kStrict ? "strict" : "cuda:" + std::to_string(index);
  }
};

}  // namespace farthing

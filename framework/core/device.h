// device.h — where a buffer lives: the host, or one CUDA device.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <string>

namespace farthing {

enum class DeviceKind : unsigned char { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::kCpu, 0}; }
  static Device cuda(int index) { return {DeviceKind::kCuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool operator==(const Device&) const = default;
  std::string name() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

}  // namespace farthing

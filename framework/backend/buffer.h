// buffer.h — Buffer: an owned, tracked allocation on a device. It takes its memory from the
// device's backend (backend_for(device).allocate_bytes) and charges it to a memory category of
// that device's tracker (core/memory.h), so `farthing plan` can be checked against what a run
// held. Here rather than in core/ because it needs the backend (docs/layers.md).
// Relies on: core/memory.h, core/tensor.h, backend/backend.h. Tested by: tests/core/test_core.cpp.
#pragma once

#include <cstddef>

#include "framework/core/device.h"
#include "framework/core/memory.h"
#include "framework/core/tensor.h"

namespace farthing {

// An owned, tracked, 64-byte-aligned allocation on a device. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device device, size_t bytes, MemoryCategory category);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  MemoryCategory category() const { return category_; }
  // The whole buffer as a contiguous tensor of the given dtype and shape.
  Tensor view(DType dtype, Shape shape) const;

 private:
  void release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_{};
  MemoryCategory category_ = MemoryCategory::kOther;
};

}  // namespace farthing

// buffer.cpp — see buffer.h.
#include "framework/backend/buffer.h"

#include <utility>

#include "framework/backend/backend.h"

namespace farthing {

Buffer::Buffer(Device device, size_t bytes, MemoryCategory category)
    : device_(device), category_(category) {
  if (bytes == 0) return;
  data_ = backend_for(device).allocate_bytes(bytes);
  bytes_ = bytes;
  memory_tracker(device).on_allocate(category, int64_t(bytes));
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(other.data_), bytes_(other.bytes_), device_(other.device_), category_(other.category_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    category_ = other.category_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (data_ == nullptr) return;
  backend_for(device_).free_bytes(data_);
  memory_tracker(device_).on_free(category_, int64_t(bytes_));
  data_ = nullptr;
  bytes_ = 0;
}

Tensor Buffer::view(DType dtype, Shape shape) const {
  const size_t need = size_t(shape.numel()) * dtype_size_bytes(dtype);
  FARTHING_CHECK(need <= bytes_, "a ", dtype_name(dtype), shape.str(), " view needs ", need,
                 " bytes but the buffer holds ", bytes_);
  return Tensor(data_, dtype, shape, device_);
}

}  // namespace farthing

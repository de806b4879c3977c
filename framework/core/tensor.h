// tensor.h — a non-owning view: pointer, dtype, shape, strides (in elements), device.
//
// Views are what models, optimizers and backends pass around; ownership lives in Buffer
// (backend/buffer.h), so a flat parameter buffer can be carved into many views without copies.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "framework/core/device.h"
#include "framework/core/dtype.h"
#include "framework/core/error.h"

namespace farthing {

inline constexpr int kMaxRank = 6;

struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> list);
  int64_t operator[](int i) const { return dims[size_t(i)]; }
  int64_t numel() const;
  bool operator==(const Shape& other) const;
  std::string str() const;  // "(2, 3)"
};

class Tensor {
 public:
  Tensor() = default;
  // A contiguous row-major view.
  Tensor(void* data, DType dtype, Shape shape, Device device = Device::cpu());
  Tensor(void* data, DType dtype, Shape shape, Shape strides_elems, Device device);

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  Device device() const { return device_; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size_bytes(dtype_); }
  bool is_contiguous() const;

  // Typed pointer; throws when T is not the storage type of dtype().
  template <class T>
  T* data_as() const {
    FARTHING_CHECK(dtype_of<T>() == dtype_, "tensor holds ", dtype_name(dtype_),
                   " but was accessed as ", dtype_name(dtype_of<T>()));
    return static_cast<T*>(data_);
  }

  // Elements [begin, begin + count) of a contiguous tensor, as a 1-D view.
  Tensor flat_slice(int64_t begin, int64_t count) const;

  std::string describe() const;  // "bf16(4, 8) on cpu"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_{};
  Shape strides_{};
  Device device_{};
};

}  // namespace farthing

// tensor.cpp — shape arithmetic and view slicing.
#include "framework/core/tensor.h"

#include <sstream>

namespace farthing {

Shape::Shape(std::initializer_list<int64_t> list) {
  FARTHING_CHECK(list.size() <= size_t(kMaxRank), "shape of rank ", list.size(),
                 " exceeds the maximum rank ", kMaxRank);
  for (int64_t d : list) {
    FARTHING_CHECK(d >= 0, "negative dimension ", d, " in a shape");
    dims[size_t(rank++)] = d;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[size_t(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank != other.rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (dims[size_t(i)] != other.dims[size_t(i)]) return false;
  }
  return true;
}

std::string Shape::str() const {
  std::ostringstream out;
  out << "(";
  for (int i = 0; i < rank; ++i) out << (i ? ", " : "") << dims[size_t(i)];
  out << ")";
  return out.str();
}

static Shape row_major_strides(const Shape& shape) {
  Shape strides = shape;
  int64_t stride = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    strides.dims[size_t(i)] = stride;
    stride *= shape.dims[size_t(i)];
  }
  return strides;
}

Tensor::Tensor(void* data, DType dtype, Shape shape, Device device)
    : data_(data), dtype_(dtype), shape_(shape), strides_(row_major_strides(shape)), device_(device) {}

Tensor::Tensor(void* data, DType dtype, Shape shape, Shape strides_elems, Device device)
    : data_(data), dtype_(dtype), shape_(shape), strides_(strides_elems), device_(device) {
  FARTHING_CHECK(shape.rank == strides_elems.rank, "shape ", shape.str(), " and strides ",
                 strides_elems.str(), " differ in rank");
}

bool Tensor::is_contiguous() const { return strides_ == row_major_strides(shape_); }

Tensor Tensor::flat_slice(int64_t begin, int64_t count) const {
  FARTHING_CHECK(is_contiguous(), "flat_slice needs a contiguous tensor, got ", describe());
  FARTHING_CHECK(begin >= 0 && count >= 0 && begin + count <= numel(), "flat_slice [", begin, ", ",
                 begin + count, ") is outside ", describe(), " of ", numel(), " elements");
  auto* base = static_cast<char*>(data_) + size_t(begin) * dtype_size_bytes(dtype_);
  return Tensor(base, dtype_, Shape{count}, device_);
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_.str() + " on " + device_.name();
}

}  // namespace farthing

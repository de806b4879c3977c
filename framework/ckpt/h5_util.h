// h5_util.h — small RAII and attribute helpers shared by the h5_* checkpoint files.
// Includes hdf5.h: only framework/ckpt/h5_*.cpp include it.
// Relies on: h5_check.h. Tested by: tests/ckpt/test_h5_checkpoint.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/ckpt/h5_check.h"
#include "framework/core/dtype.h"

namespace farthing::h5_detail {

// Owns an HDF5 id; closes it with the matching H5?close on destruction.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Id(H5Id&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  H5Id& operator=(H5Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      closer_ = other.closer_;
      other.id_ = -1;
    }
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// The file and memory HDF5 types of a farthing dtype (narrow floats as their raw integers).
struct H5Types {
  hid_t file_type;
  hid_t mem_type;
};
H5Types h5_types_of(DType dtype);

void write_attribute_i64(hid_t object, const char* name, int64_t value);
void write_attribute_u32(hid_t object, const char* name, uint32_t value);
void write_attribute_f64(hid_t object, const char* name, double value);
void write_attribute_string(hid_t object, const char* name, const std::string& value);
void write_attribute_i64_array(hid_t object, const char* name, const std::vector<int64_t>& values);
void write_attribute_f32_array(hid_t object, const char* name, const std::vector<float>& values);

bool has_attribute(hid_t object, const char* name);
int64_t read_attribute_i64(hid_t object, const char* name);
double read_attribute_f64(hid_t object, const char* name);
std::string read_attribute_string(hid_t object, const char* name);
std::vector<int64_t> read_attribute_i64_array(hid_t object, const char* name);
std::vector<float> read_attribute_f32_array(hid_t object, const char* name);

}  // namespace farthing::h5_detail

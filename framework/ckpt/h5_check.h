// h5_check.h — FARTHING_H5_CHECK(expr): the value of an HDF5 call, or a farthing::Error.
//
// HDF5 signals failure with a negative return (herr_t or hid_t). The message keeps the failing
// expression, HDF5's own error stack (major/minor descriptions, innermost last) and
// file:line:function. h5_silence_default_errors() turns off HDF5's habit of printing its stack
// to stderr, so the Error is the only report. Includes hdf5.h: only framework/ckpt/h5_*.cpp
// include this file (headers keep HDF5 ids as int64_t).
// Relies on: HDF5 >= 1.10 (hid_t is int64_t), framework/core/error.h.
// Tested by: tests/ckpt/test_h5_checkpoint.cpp (truncated files, unwritable directories).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "framework/core/error.h"

static_assert(sizeof(hid_t) == sizeof(int64_t), "farthing stores HDF5 ids as int64_t");

namespace farthing::h5_detail {

void silence_default_errors();
std::string error_stack_text();
[[noreturn]] void throw_h5_error(const char* expression, const char* file, int line,
                                 const char* function);

template <class T>
T check_h5(T value, const char* expression, const char* file, int line, const char* function) {
  if (value < 0) [[unlikely]] throw_h5_error(expression, file, line, function);
  return value;
}

}  // namespace farthing::h5_detail

#define FARTHING_H5_CHECK(expr) \
  ::farthing::h5_detail::check_h5((expr), #expr, __FILE__, __LINE__, __func__)

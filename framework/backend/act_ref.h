// act_ref.h — an activation array whose elements are fp32 or bf16.
//
// Under bf16 compute the GEMMs' input activations (each norm's output, attention's output, the
// MLP's activation) are stored as bf16. The op that writes one rounds each
// value to nearest even once, the very bits NnOps::narrow(kBF16) gives its fp32 value, so a bf16
// GEMM reads it in place and the results are bit for bit those of an fp32 array narrowed before
// each GEMM, on every backend, at half the bytes and without the narrowing pass. (Attention's
// backward also reads its output: it reads the rounded values, as cuDNN's does.)
// Implicit from float* (fp32), so callers that keep fp32 activations read as before.
// Relies on: kernels/numerics/op_shapes.h (GemmDtype). Tested by: tests/kernels/test_nn_ops_parity.cpp
// (the bf16 rows), tests/models/test_model_modes.cpp (bf16 storage gives the narrowed run's bits).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "framework/core/error.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing {

struct ActRef {
  void* data = nullptr;
  kernels::GemmDtype dtype = kernels::GemmDtype::kF32;  // kF32 or kBF16

  ActRef() = default;
  ActRef(float* p) : data(p) {}  // NOLINT(google-explicit-constructor): fp32 is the plain case
  static ActRef bf16(uint16_t* p) {
    ActRef a;
    a.data = p;
    a.dtype = kernels::GemmDtype::kBF16;
    return a;
  }

  bool is_bf16() const { return dtype == kernels::GemmDtype::kBF16; }
  int64_t element_bytes() const { return is_bf16() ? 2 : 4; }
  float* f32() const {
    FARTHING_CHECK(!is_bf16(), "an fp32 activation was expected, but this one is stored as bf16");
    return static_cast<float*>(data);
  }
  uint16_t* bf16() const {
    FARTHING_CHECK(is_bf16(), "a bf16 activation was expected, but this one is stored as fp32");
    return static_cast<uint16_t*>(data);
  }
  // The array from element `elems` on (rows further down a row-major matrix).
  ActRef offset(int64_t elems) const {
    ActRef a = *this;
    if (data != nullptr) a.data = static_cast<char*>(data) + elems * element_bytes();
    return a;
  }
};

// SwiGLU, GELU and attention read their input (the MLP's in-projection, qkv) as fp32 or bf16; a
// bf16 input is only ever stored beside a bf16 output, so the kernels have no fp32-output form
// of it.
inline void check_bf16_input_storage(const char* op, ActRef out, ActRef in) {
  FARTHING_CHECK(!in.is_bf16() || out.is_bf16(), op, ": a bf16 input needs a bf16 output, but the output is fp32");
}

// The backwards read and write their gradients (and SwiGLU's and GELU's, their input) in one
// storage type: all fp32, or all bf16 (bf16 activations store them all so). Named arrays, so the
// error says which differ.
struct NamedAct {
  const char* name;
  ActRef act;
};
inline void check_one_storage(const char* op, std::initializer_list<NamedAct> arrays) {
  bool same = true;
  for (const NamedAct& a : arrays) same = same && a.act.dtype == arrays.begin()->act.dtype;
  if (same) return;
  std::string types;
  for (const NamedAct& a : arrays) {
    if (!types.empty()) types.append(", ");
    types.append(a.name).append(a.act.is_bf16() ? " bf16" : " fp32");
  }
  FARTHING_FAIL(op, ": these arrays are stored alike (all fp32 or all bf16), but they are ", types);
}

}  // namespace farthing

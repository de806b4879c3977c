// act_storage.h — how a host kernel reads and writes an activation element of its storage type:
// fp32 as is; bf16 (uint16_t bits) widened exactly on load and rounded to nearest even once on
// store. The CPU twin of kernels/cuda/act_storage.cuh: the kernels are templated on the storage
// type, so bf16 activations (framework/backend/act_ref.h) need no second copy of any kernel.
// Relies on: numerics/bf16.h. Used by: nn_cpu.cpp, attention_cpu.cpp.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/numerics/bf16.h"

namespace farthing::kernels::cpu_act {

inline void store(float* p, float v) { *p = v; }
inline void store(uint16_t* p, float v) { *p = numerics::f32_to_bf16_rne(v); }
inline float widened(float x) { return x; }
inline float widened(uint16_t bf16) { return numerics::bf16_to_f32(bf16); }

// The fp32 values of n consecutive elements: in place, or widened from bf16 into tmp (n floats).
// A reduction over them then sums the same fp32 values in the same order for either storage, so
// the two give the same bits (a loop over bf16 loads may vectorise, and so sum, differently).
inline const float* row_f32(const float* x, float* /*tmp*/, int64_t /*n*/) { return x; }
inline const float* row_f32(const uint16_t* x, float* tmp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) tmp[i] = numerics::bf16_to_f32(x[i]);
  return tmp;
}

// One thread's widened copies of up to `rows` rows of c elements each (none for fp32, read in
// place): row(x, i) is row_f32 into copy i.
template <class T>
class RowsF32 {
 public:
  RowsF32(int64_t rows, int64_t c) : copies_(std::is_same_v<T, float> ? 0 : size_t(rows * c)), c_(c) {}
  const float* row(const T* x, int64_t i) { return row_f32(x, copies_.empty() ? nullptr : copies_.data() + i * c_, c_); }

 private:
  std::vector<float> copies_;
  int64_t c_;
};

}  // namespace farthing::kernels::cpu_act

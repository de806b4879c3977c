// cast_cuda.h — array casts on a CUDA device: grid-stride kernels over kernels/numerics.
//
// The same functions as kernels/cpu/cast_cpu.h, on device pointers, queued on `stream`. Each
// kernel applies the scalar definition from numerics/ to every element and adds no arithmetic
// of its own, so results are bitwise those of the CPU loops. Stochastic-rounding bits depend
// only on (key, global_offset + i), never on the launch geometry.
// Relies on: numerics/{bf16,minifloat,stochastic_round}.h, the CUDA runtime.
// Tested by: tests/kernels/test_cuda_parity.cpp (bitwise against the CPU backend).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/numerics/minifloat.h"
#include "kernels/numerics/narrow_format.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

using numerics::NarrowFormat;

// dst[i] = round_nearest_even(src[i]) for n elements (dst holds 2- or 1-byte codes).
void cast_f32_to_narrow_cuda(NarrowFormat format, const float* src, void* dst, size_t n,
                             numerics::Overflow overflow, cudaStream_t stream);
// dst[i] = stochastic_round(src[i]) with bits keyed by (key, global_offset + i).
void cast_f32_to_narrow_sr_cuda(NarrowFormat format, const float* src, void* dst, size_t n,
                                numerics::RandomKey key, uint64_t global_offset,
                                cudaStream_t stream);
// dst[i] = exact fp32 value of src[i].
void cast_narrow_to_f32_cuda(NarrowFormat format, const void* src, float* dst, size_t n,
                             cudaStream_t stream);

}  // namespace farthing::kernels

// cast_cpu.h — array casts on the host: OpenMP loops over kernels/numerics.
//
// Each function is the scalar definition from numerics/ applied to every element; no
// arithmetic of its own. Stochastic-rounding casts take the global flat index of src[0]
// so their bits do not depend on chunking or thread count.
// Tested by: tests/numerics/test_stochastic_round.cpp, tests/backend/test_strict_device.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/numerics/minifloat.h"
#include "kernels/numerics/narrow_format.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

using numerics::NarrowFormat;

// dst[i] = round_nearest_even(src[i]) for n elements (dst holds 2- or 1-byte codes).
void cast_f32_to_narrow_cpu(NarrowFormat format, const float* src, void* dst, size_t n,
                            numerics::Overflow overflow);
// dst[i] = stochastic_round(src[i]) with bits keyed by (key, global_offset + i).
void cast_f32_to_narrow_sr_cpu(NarrowFormat format, const float* src, void* dst, size_t n,
                               numerics::RandomKey key, uint64_t global_offset);
// dst[i] = exact fp32 value of src[i].
void cast_narrow_to_f32_cpu(NarrowFormat format, const void* src, float* dst, size_t n);

}  // namespace farthing::kernels

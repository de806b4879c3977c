// numerics_kernels.h — what `farthing bench numerics` measures, written once for every device:
// the input values, and the cast / SR cast / 8-bit (de)quantize rows run through a Backend.
// bench_numerics.cpp (CPU, against memcpy) and bench_numerics_cuda.cpp (against a device copy)
// differ only in how they time a row and what they compare it with.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "framework/backend/backend.h"

namespace farthing::bench {

// Element i of the input: spread like optimizer moments (many magnitudes, both signs, inside
// fp8's range), the same on every device.
float moment_like_value(int64_t i);

// Times one kernel row: its name, the bytes it moves per element, and the call.
using MeasureRow = std::function<void(const std::string& name, double bytes_per_elem, const std::function<void()>& run)>;

// Every cast f32 <-> {bf16, f16, e4m3, e5m2}, round-to-nearest (saturating) and stochastic.
// narrow: a buffer of n elements of 2 bytes, viewed in each narrow format.
void measure_cast_rows(Backend& backend, const Tensor& f32, const Tensor& f32_out, void* narrow, int64_t n,
                       const MeasureRow& measure);
// 8-bit block quantization of m and v, and dequantization. codes: n bytes; absmax: n / 256 floats.
void measure_quant_rows(Backend& backend, const Tensor& f32, const Tensor& f32_out, const Tensor& codes,
                        const Tensor& absmax, const MeasureRow& measure);

}  // namespace farthing::bench

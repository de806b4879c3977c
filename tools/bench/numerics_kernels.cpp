// numerics_kernels.cpp — see numerics_kernels.h.
#include "tools/bench/numerics_kernels.h"

#include <cmath>

namespace farthing::bench {

namespace nm = farthing::numerics;

float moment_like_value(int64_t i) {
  const uint64_t h = uint64_t(i) * 0x9E3779B97F4A7C15ull;
  const float mantissa = 1.0f + float((h >> 40) & 0xFFFF) / 65536.0f;
  const int exponent = int((h >> 20) % 24) - 16;
  return ((h >> 63) ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent);
}

void measure_cast_rows(Backend& backend, const Tensor& f32, const Tensor& f32_out, void* narrow_data, int64_t n,
                       const MeasureRow& measure) {
  struct Format {
    DType dtype;
    const char* name;
  };
  const Format formats[] = {{DType::kBF16, "bf16"}, {DType::kF16, "f16"}, {DType::kE4M3, "e4m3"}, {DType::kE5M2, "e5m2"}};
  for (const Format& f : formats) {
    const Tensor narrow(narrow_data, f.dtype, Shape{n}, f32.device());
    const double narrow_bytes = double(dtype_size_bytes(f.dtype));
    CastOptions rne;
    rne.overflow = nm::Overflow::kSaturate;
    measure(std::string("cast f32->") + f.name, 4 + narrow_bytes, [&] { backend.cast(narrow, f32, rne); });
    CastOptions sr;
    sr.rounding = nm::Rounding::kStochastic;
    sr.random_key = {1234, 1, nm::RandomPurpose::kWeightCast};
    measure(std::string("sr cast f32->") + f.name, 4 + narrow_bytes, [&] { backend.cast(narrow, f32, sr); });
    measure(std::string("cast ") + f.name + "->f32", narrow_bytes + 4, [&] { backend.cast(f32_out, narrow, {}); });
  }
}

void measure_quant_rows(Backend& backend, const Tensor& f32, const Tensor& f32_out, const Tensor& codes,
                        const Tensor& absmax, const MeasureRow& measure) {
  const double quant_bytes = 4 + 1 + 4.0 / 256;
  measure("quantize 8-bit signed", quant_bytes, [&] { backend.block_quantize(codes, absmax, f32, nm::MapSign::kSigned); });
  measure("quantize 8-bit unsigned", quant_bytes,
          [&] { backend.block_quantize(codes, absmax, f32, nm::MapSign::kUnsigned); });
  backend.block_quantize(codes, absmax, f32, nm::MapSign::kSigned);
  measure("dequantize 8-bit signed", quant_bytes,
          [&] { backend.block_dequantize(f32_out, codes, absmax, nm::MapSign::kSigned); });
}

}  // namespace farthing::bench

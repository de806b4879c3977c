// host_device.h — the portability layer every numerics header stands on.
//
// FARTHING_HD marks a function callable from host and device code, so each scalar
// operation is written once and looped over by kernels/cpu and kernels/cuda alike.
// Bit casts go through memcpy on the host and the intrinsics on the device: both are
// exact reinterpretations, never conversions.
// Tested by: tests/numerics (all of them rely on these casts).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FARTHING_HD __host__ __device__ __forceinline__
#else
#define FARTHING_HD inline
#endif

namespace farthing::numerics {

FARTHING_HD uint32_t f32_to_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

FARTHING_HD float bits_to_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// How a cast treats values beyond the target's largest finite number.
enum class Overflow : uint8_t {
  kSaturate,     // clamp to ±max finite (cvt.satfinite; what scaled GEMM inputs use)
  kToInfOrNan,   // IEEE-style: inf where the format has one, NaN otherwise (ml_dtypes, PyTorch)
};

}  // namespace farthing::numerics

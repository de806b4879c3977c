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

// The one NaN a computed NaN is stored as. An NVIDIA GPU's float ops return this pattern for every
// NaN result, while x86 makes 0xFFC00000 (0 * inf) or passes an operand's payload on, so an op
// whose NaN outputs are stored (the 8-bit moments' dequantized values) maps its NaNs to this one
// to keep both backends' bits equal: dequantizing a block whose absmax is inf gives 0xFFC00000 on
// an x86 CPU and 0x7FFFFFFF on an H200.
inline constexpr uint32_t kCanonicalNanBits = 0x7FFFFFFFu;

FARTHING_HD float bits_to_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// x, or the canonical NaN when x is a NaN.
FARTHING_HD float canonical_nan(float x) { return x == x ? x : bits_to_f32(kCanonicalNanBits); }

// How a cast treats values beyond the target's largest finite number.
enum class Overflow : uint8_t {
  kSaturate,     // clamp to ±max finite (cvt.satfinite; what scaled GEMM inputs use)
  kToInfOrNan,   // IEEE-style: inf where the format has one, NaN otherwise (ml_dtypes, PyTorch)
};

}  // namespace farthing::numerics

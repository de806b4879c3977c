// fp4_scales.h — the scales of the two FP4 block formats: E8M0 for MXFP4, E4M3 plus an fp32
// per-tensor scale for NVFP4. Which scale a block gets, how it is stored, and the exact multiplier
// its elements are encoded with; fp4_block.h applies them to a block.
//
// MXFP4 (OCP Microscaling Formats v1.0, §5 and §6.3): 32 E2M1 elements share one E8M0 scale X.
//   E8M0: an unsigned power of two 2^(code - 127), code 0..254 (2^-127 .. 2^127), 0xFF = NaN; no
//   zero, no sign. The scale of a block is X = 2^(floor(log2(amax)) - emax_elem), emax_elem = 2 for
//   E2M1, with the exponent clamped below at -127 (code 0) as Microsoft's microxcaling reference
//   does ("the min scale is -127, not -126"). The element codes are e2m1(x / X), saturating: amax / X
//   lies in [4, 8), so the block's largest values above 6 clip to 6, as v1.0 specifies.
// NVFP4 (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv 2509.25149, §2 and its
// appendix on the quantization procedure; Transformer Engine's reference NVFP4 quantizer computes
// the same): 16 E2M1 elements share one E4M3 scale, and the tensor has one fp32 scale. Implemented,
// each step one IEEE fp32 operation (round to nearest even) in this order:
//     s_enc   = (6 * 448) / amax_tensor                  global encode scale
//     s_dec   = 1 / s_enc                                global decode scale
//     d_b     = e4m3_satfinite((amax_b / 6) * s_enc)     block scale, stored (round to nearest even)
//     m_b     = 1 / (float(d_b) * s_dec)                 block encode multiplier
//     code_i  = e2m1(x_i * m_b)                          saturating at ±6
//     x_i    ~= (e2m1_value(code_i) * float(d_b)) * s_dec   (the first product is exact)
// which is algebraically x_i / (float(d_b) / s_enc), the form NVIDIA's recipe is often written in;
// the rounding steps above are the paper's and Transformer Engine's reference.
// NOTE: where this departs from Transformer Engine's reference, and why:
//   - amax_b / 6 is one division, as the paper writes it; TE's kernel path instead multiplies amax_b
//     by fp32(s_enc * fp32(1/6)), which can differ in the last fp32 bit and so, rarely, in d_b.
//   - s_enc for a tensor amax of 0, inf or NaN is 1 (fp8_scaling.h's rule; TE gives FLT_MAX for 0 and
//     NaN for NaN), and s_enc is capped at 2^126 (TE: FLT_MAX) so s_dec stays a normal float that no
//     flush-to-zero mode can touch; the cap only acts when amax_tensor < 2688 * 2^-126.
//   - a block whose d_b is 0 (amax_b is 0, or so small next to the tensor's that it underflows E4M3)
//     encodes with m_b = 0, so every element codes as ±0; TE uses m_b = FLT_MAX and codes ±6. Both
//     decode to ±0 (times a scale of 0).
// NOTE: NaN and inf (both formats): a block whose amax is NaN or inf gets the NaN scale (E8M0 0xFF,
// E4M3 0x7F) and every element code 0, so the whole block decodes to NaN: the non-finite value is
// kept where E2M1 cannot hold it, and the step is skipped as non-finite downstream. (MX v1.0 and
// microxcaling make an inf or NaN amax a NaN scale; an inf element saturating to ±6 would hide it.)
// Relies on: host_device.h, minifloat.h, fp4_e2m1.h. Tested by: tests/numerics/test_fp4.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/fp4_e2m1.h"
#include "kernels/numerics/host_device.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::numerics {

// --- E8M0 -------------------------------------------------------------------------------------

inline constexpr uint8_t kE8M0Nan = 0xFF;
inline constexpr int kE8M0Bias = 127;

// Exact: 2^(code - 127). Code 0 is 2^-127, an fp32 subnormal (0x00400000); 0xFF is NaN.
FARTHING_HD float e8m0_to_f32(uint8_t code) {
  const uint32_t bits = code == 0 ? 0x00400000u : code == kE8M0Nan ? 0x7FC00000u : uint32_t(code) << 23;
  return bits_to_f32(bits);
}

// The largest E8M0 value <= |s|, i.e. 2^floor(log2|s|), clamped below at 2^-127 (code 0, which
// zero and every |s| < 2^-126 also get); NaN and inf give 0xFF. The sign is ignored (scales come
// from amaxes). On an exact power of two in range this is the exact encoding.
FARTHING_HD uint8_t f32_to_e8m0_floor(float s) {
  const uint32_t biased = (f32_to_bits(s) >> 23) & 0xFFu;  // 255 for inf and NaN: the NaN code
  return uint8_t(biased);
}

// MX v1.0's block scale for a block of this amax: 2^(floor(log2(amax)) - 2), as an E8M0 code.
// NOTE: computed on the exponent field, so no log2 or division is involved and every backend
// agrees bit for bit. An fp32-subnormal amax has floor(log2) <= -127 and lands on the clamp.
FARTHING_HD uint8_t mxfp4_scale_from_amax(float amax) {
  const int floor_code = f32_to_e8m0_floor(amax);
  const int code = floor_code - kE2M1MaxExp;
  return floor_code == kE8M0Nan ? kE8M0Nan : uint8_t(code > 0 ? code : 0);
}

// The exact multiplier 1 / X = 2^(127 - code) that elements are encoded with (x * 2^-e is the
// correctly rounded x / 2^e, and the multiplier is a normal float for every code the encoder
// makes, 0..252). Code 254 gives the subnormal 2^-127; the NaN code gives NaN.
FARTHING_HD float mxfp4_encode_multiplier(uint8_t scale_code) {
  const uint32_t bits = scale_code == kE8M0Nan ? 0x7FC00000u
                        : scale_code == 254      ? 0x00400000u
                                                 : uint32_t(254 - scale_code) << 23;
  return bits_to_f32(bits);
}

// --- NVFP4 ------------------------------------------------------------------------------------

inline constexpr float kNvfp4ScaleMax = 448.0f;  // E4M3's largest finite value
inline constexpr uint8_t kE4M3NanCode = 0x7F;

// s_enc = (6 * 448) / amax_tensor; 1 for an amax of 0, inf or NaN; at most 2^126 (see the header).
FARTHING_HD float nvfp4_global_encode_scale(float tensor_amax) {
  const uint32_t bits = f32_to_bits(tensor_amax) & 0x7FFFFFFFu;
  if (bits == 0u || bits >= 0x7F800000u) return 1.0f;
  const float s = (kE2M1MaxFinite * kNvfp4ScaleMax) / bits_to_f32(bits);  // 2688 / amax
  const float kMaxScale = bits_to_f32(uint32_t(127 + 126) << 23);           // 2^126
  return s > kMaxScale ? kMaxScale : s;
}

// s_dec = 1 / s_enc, what a dequantized value (or a GEMM's output) is finally multiplied by.
FARTHING_HD float nvfp4_global_decode_scale(float global_encode_scale) { return 1.0f / global_encode_scale; }

// d_b = e4m3_satfinite((amax_b / 6) * s_enc); NaN or inf amax_b gives the NaN code 0x7F.
FARTHING_HD uint8_t nvfp4_block_scale(float block_amax, float global_encode_scale) {
  const uint32_t bits = f32_to_bits(block_amax) & 0x7FFFFFFFu;
  const float decode = bits_to_f32(bits) / kE2M1MaxFinite;
  const uint8_t code = f32_to_e4m3(decode * global_encode_scale, Overflow::kSaturate);
  return bits >= 0x7F800000u ? kE4M3NanCode : code;
}

// m_b = 1 / (d_b * s_dec), at most FLT_MAX (as TE); 0 where d_b is 0; NaN for the NaN code.
FARTHING_HD float nvfp4_encode_multiplier(uint8_t scale_code, float global_decode_scale) {
  const float d = e4m3_to_f32(scale_code);
  const float m = 1.0f / (d * global_decode_scale);
  const float kFltMax = bits_to_f32(0x7F7FFFFFu);
  const float capped = m > kFltMax ? kFltMax : m;
  return d == 0.0f ? 0.0f : capped;  // NaN d falls through as NaN (the comparisons are false)
}

}  // namespace farthing::numerics

// block_quant_cpu_avx2.h — 8-bit block quantization, eight lanes at a time (AVX2 + FMA hosts).
//
// Inline so that the fused AdamW loop (optim_cpu_avx2.cpp) and block_quant_cpu.cpp share one
// copy. Every function computes, lane by lane, exactly what the portable loops of
// block_quant_cpu.cpp compute (which are in turn the table form of numerics::
// quantize_with_absmax): y = x / absmax as an IEEE division (vdivps is correctly rounded; no
// reciprocal), the packed |y| <= 1 table (QuantMapCpu::unit) read with scalar loads, the integer
// key compare, the signed map's sign fix. Only for blocks with a finite, non-zero absmax and a
// map whose unit table is valid; the callers send other blocks to the portable code.
// Tested by: tests/optim/test_adamw_avx2_matches_portable.cpp (bits vs the portable loops),
// tests/numerics/test_block_quant.cpp (table == search).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define FARTHING_CPU_AVX2 1
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/block_quant_cpu.h"

namespace farthing::kernels::avx2 {

// table[index] for eight lanes, by eight scalar loads.
// NOTE: not vpgatherdd: on the Zen 3 hosts this runs on, one 8-lane gather measured ~6 ns
// (microcoded), slower than eight scalar loads and inserts.
inline __m256i lookup8(const uint32_t* table, __m256i index) {
  alignas(32) uint32_t ix[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(ix), index);
  return _mm256_setr_epi32(int(table[ix[0]]), int(table[ix[1]]), int(table[ix[2]]), int(table[ix[3]]),
                           int(table[ix[4]]), int(table[ix[5]]), int(table[ix[6]]), int(table[ix[7]]));
}

// map[code] for eight byte codes.
inline __m256 lookup8_codes(const float* map, const uint8_t* codes) {
  return _mm256_setr_ps(map[codes[0]], map[codes[1]], map[codes[2]], map[codes[3]], map[codes[4]], map[codes[5]],
                        map[codes[6]], map[codes[7]]);
}

// Codes (one per int32 lane, 0..255) of eight values of a block with absmax `absmax`.
inline __m256i quantize8_unit(const uint32_t* unit, bool is_signed, __m256 x, __m256 absmax) {
  const __m256 y = _mm256_div_ps(x, absmax);
  const __m256i bits = _mm256_castps_si256(y);
  // quant_map_unit_index: ((bits >> 17) & 0x4000) | ((bits >> 16) & 0x3FFF)
  const __m256i index = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 17), _mm256_set1_epi32(0x4000)),
                                        _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x3FFF)));
  const __m256i e = lookup8(unit, index);
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  const __m256i y_negative = _mm256_srai_epi32(bits, 31);  // all ones where y < 0 (or -0)
  const __m256i key = _mm256_xor_si256(_mm256_and_si256(bits, low16), _mm256_and_si256(y_negative, low16));
  // key and threshold are both in [0, 0xFFFF]: a signed compare is the unsigned one.
  const __m256i above = _mm256_cmpgt_epi32(key, _mm256_srli_epi32(e, 8));  // -1 where key > t
  __m256i code = _mm256_sub_epi32(_mm256_and_si256(e, _mm256_set1_epi32(0xFF)), above);
  if (is_signed) {
    const __m256i code_negative = _mm256_cmpgt_epi32(_mm256_set1_epi32(127), code);
    const __m256i x_negative = _mm256_srai_epi32(_mm256_castps_si256(x), 31);
    const __m256i differs = _mm256_xor_si256(code_negative, x_negative);
    const __m256i toward = _mm256_or_si256(x_negative, _mm256_set1_epi32(1));  // -1 or +1
    code = _mm256_add_epi32(code, _mm256_and_si256(differs, toward));
  }
  return code;
}

// 32 codes (four vectors of int32 in 0..255) as 32 bytes in element order.
inline __m256i pack_codes32(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  const __m256i p01 = _mm256_packus_epi32(c0, c1);
  const __m256i p23 = _mm256_packus_epi32(c2, c3);
  const __m256i bytes = _mm256_packus_epi16(p01, p23);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Codes of x[0, count) (count <= 256) for a block whose absmax (finite, > 0) is known.
inline void quantize_block_unit(const QuantMapCpu& map, const float* x, int count, float absmax, uint8_t* out) {
  const uint32_t* unit = map.unit.data();
  const bool is_signed = map.is_signed;
  const __m256 a = _mm256_set1_ps(absmax);
  int i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i c0 = quantize8_unit(unit, is_signed, _mm256_loadu_ps(x + i), a);
    const __m256i c1 = quantize8_unit(unit, is_signed, _mm256_loadu_ps(x + i + 8), a);
    const __m256i c2 = quantize8_unit(unit, is_signed, _mm256_loadu_ps(x + i + 16), a);
    const __m256i c3 = quantize8_unit(unit, is_signed, _mm256_loadu_ps(x + i + 24), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), pack_codes32(c0, c1, c2, c3));
  }
  if (i < count) {
    alignas(32) float rest[32] = {};
    std::memcpy(rest, x + i, sizeof(float) * size_t(count - i));
    alignas(32) uint8_t tail[32];
    const __m256i c0 = quantize8_unit(unit, is_signed, _mm256_load_ps(rest), a);
    const __m256i c1 = quantize8_unit(unit, is_signed, _mm256_load_ps(rest + 8), a);
    const __m256i c2 = quantize8_unit(unit, is_signed, _mm256_load_ps(rest + 16), a);
    const __m256i c3 = quantize8_unit(unit, is_signed, _mm256_load_ps(rest + 24), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail), pack_codes32(c0, c1, c2, c3));
    std::memcpy(out + i, tail, size_t(count - i));
  }
}

// Largest |x| bit pattern of eight lanes folded into max_bits (numerics::block_absmax_bits).
inline __m256i absmax_bits_update(__m256i max_bits, __m256 x) {
  return _mm256_max_epu32(max_bits, _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7FFFFFFF)));
}

inline uint32_t hmax_epu32(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return uint32_t(_mm_cvtsi128_si32(m));
}

}  // namespace farthing::kernels::avx2

#endif

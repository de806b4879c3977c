// block_quant_cpu_avx2.h — 8-bit block quantization, eight lanes at a time (AVX2 + FMA hosts).
//
// Inline so that the fused AdamW loop (optim_cpu_avx2.cpp) and block_quant_cpu.cpp share one
// copy. Every function computes, lane by lane, exactly what the portable loops of
// block_quant_cpu.cpp compute (which are in turn the table form of numerics::
// quantize_with_absmax): y = x / absmax as an IEEE division (vdivps is correctly rounded; no
// reciprocal), the packed |y| <= 1 table (QuantMapCpu::unit_codes: unit re-indexed by y's top
// 16 bits, with the signed map's sign fix precomputed) read with scalar loads, the integer
// key compare. Only for blocks with a finite, non-zero absmax and a
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

// NOTE: table reads are scalar loads, not vpgatherdd: on the Zen 3 hosts this runs on, one
// 8-lane gather measured ~6 ns (microcoded), slower than eight scalar loads and inserts.

// map[code] for eight byte codes.
inline __m256 lookup8_codes(const float* map, const uint8_t* codes) {
  return _mm256_setr_ps(map[codes[0]], map[codes[1]], map[codes[2]], map[codes[3]], map[codes[4]], map[codes[5]],
                        map[codes[6]], map[codes[7]]);
}

// Codes (one per int32 lane, 0..255) of the eight quotients y[0, 8) (y = x / absmax, already
// divided), through QuantMapCpu::unit_codes (bucket = y's top 16 bits; sign fix in the table).
// y was stored by an earlier pass, so the 16-bit loads of the buckets read settled memory
// (no store-to-load forwarding from a wide store).
inline __m256i quantize8_unit(const uint32_t* unit_codes, const float* y) {
  const uint16_t* half = reinterpret_cast<const uint16_t*>(y);  // half[2k + 1]: lane k's top 16 bits
  const __m256i e = _mm256_setr_epi32(int(unit_codes[half[1]]), int(unit_codes[half[3]]), int(unit_codes[half[5]]),
                                      int(unit_codes[half[7]]), int(unit_codes[half[9]]), int(unit_codes[half[11]]),
                                      int(unit_codes[half[13]]), int(unit_codes[half[15]]));
  const __m256i bits = _mm256_load_si256(reinterpret_cast<const __m256i*>(y));
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  // key(y): the low 16 bits, flipped for a negative y.
  const __m256i key = _mm256_and_si256(_mm256_xor_si256(bits, _mm256_srai_epi32(bits, 31)), low16);
  // key and t are both in [0, 0xFFFF]: a signed compare is the unsigned one.
  const __m256i above = _mm256_cmpgt_epi32(key, _mm256_and_si256(e, low16));  // -1 where key > t
  // Byte 2 (key <= t) or byte 3 (key > t) of each lane's entry, into the lane's low byte.
  // (0x80 control bytes zero the rest; subtracting -1 moves the index from byte 2 to byte 3.)
  const __m256i pick = _mm256_setr_epi32(int(0x80808002u), int(0x80808006u), int(0x8080800Au), int(0x8080800Eu),
                                         int(0x80808002u), int(0x80808006u), int(0x8080800Au), int(0x8080800Eu));
  return _mm256_shuffle_epi8(e, _mm256_sub_epi32(pick, above));
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
  const uint32_t* unit = map.unit_codes.data();
  const __m256 a = _mm256_set1_ps(absmax);
  // Pass 1: the quotients (IEEE division), zero-padded to a multiple of 32.
  alignas(32) float y[256];
  const int padded = (count + 31) & ~31;
  int i = 0;
  for (; i + 8 <= count; i += 8) _mm256_store_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(x + i), a));
  if (i < count) {
    alignas(32) float rest[8] = {};
    std::memcpy(rest, x + i, sizeof(float) * size_t(count - i));
    _mm256_store_ps(y + i, _mm256_div_ps(_mm256_load_ps(rest), a));
    i += 8;
  }
  for (; i < padded; i += 8) _mm256_store_ps(y + i, _mm256_setzero_ps());
  // Pass 2: the codes, 32 at a time.
  for (int j = 0; j < padded; j += 32) {
    const __m256i bytes = pack_codes32(quantize8_unit(unit, y + j), quantize8_unit(unit, y + j + 8),
                                       quantize8_unit(unit, y + j + 16), quantize8_unit(unit, y + j + 24));
    if (j + 32 <= count) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), bytes);
    } else {
      alignas(32) uint8_t tail[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tail), bytes);
      std::memcpy(out + j, tail, size_t(count - j));
    }
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

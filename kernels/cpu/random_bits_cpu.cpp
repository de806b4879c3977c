// random_bits_cpu.cpp — see random_bits_cpu.h.
#include "kernels/cpu/random_bits_cpu.h"

#include <algorithm>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace farthing::kernels {

namespace nm = farthing::numerics;

// count <= kRandomBitsChunk. Whole Philox groups (four elements per call) are generated in a
// vectorized pass, the partial groups at either end one element at a time; both give
// random_bits_for_element's bits.
void fill_random_bits_cpu(nm::RandomKey key, uint64_t global_begin, int count, uint32_t* bits) {
  const int head = std::min<int>(count, int((4 - (global_begin & 3)) & 3));
  for (int i = 0; i < head; ++i) bits[i] = nm::random_bits_for_element(key, global_begin + uint64_t(i));
  const int groups = (count - head) / 4;
  const uint64_t first_group = (global_begin + uint64_t(head)) >> 2;
  alignas(64) uint32_t w0[kRandomBitsChunk / 4], w1[kRandomBitsChunk / 4], w2[kRandomBitsChunk / 4], w3[kRandomBitsChunk / 4];
  int j0 = 0;
#if defined(__AVX2__)
  // Eight groups per iteration: numerics::philox4x32_10 with the 32x32->64 products split into
  // even and odd lanes (vpmuludq); same counter, key schedule and word order.
  {
    const __m256i mul0 = _mm256_set1_epi32(int(nm::philox_detail::kMul0));
    const __m256i mul1 = _mm256_set1_epi32(int(nm::philox_detail::kMul1));
    const __m256i step = _mm256_set1_epi32(int(key.step));
    const __m256i purpose = _mm256_set1_epi32(int(uint32_t(key.purpose)));
    const auto mul_hi_lo = [](__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
      const __m256i even = _mm256_mul_epu32(a, m);
      const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
      hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
      lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    };
    // Two independent sets of eight groups per iteration, for instruction-level parallelism.
    constexpr int kSets = 2;
    for (; j0 + 8 * kSets <= groups; j0 += 8 * kSets) {
      alignas(32) uint32_t lo32[8 * kSets], hi32[8 * kSets];
      for (int l = 0; l < 8 * kSets; ++l) {
        const uint64_t group = first_group + uint64_t(j0 + l);
        lo32[l] = uint32_t(group);
        hi32[l] = uint32_t(group >> 32);
      }
      __m256i c0[kSets], c1[kSets], c2[kSets], c3[kSets];
      for (int u = 0; u < kSets; ++u) {
        c0[u] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo32 + 8 * u));
        c1[u] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi32 + 8 * u));
        c2[u] = step;
        c3[u] = purpose;
      }
      uint32_t k0 = uint32_t(key.seed), k1 = uint32_t(key.seed >> 32);
      for (int r = 0; r < 10; ++r) {
        const __m256i kk0 = _mm256_set1_epi32(int(k0)), kk1 = _mm256_set1_epi32(int(k1));
        for (int u = 0; u < kSets; ++u) {
          __m256i hi0, lo0, hi1, lo1;
          mul_hi_lo(c0[u], mul0, hi0, lo0);
          mul_hi_lo(c2[u], mul1, hi1, lo1);
          c0[u] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[u]), kk0);
          c1[u] = lo1;
          c2[u] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[u]), kk1);
          c3[u] = lo0;
        }
        k0 += nm::philox_detail::kWeyl0;
        k1 += nm::philox_detail::kWeyl1;
      }
      for (int u = 0; u < kSets; ++u) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(w0 + j0 + 8 * u), c0[u]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w1 + j0 + 8 * u), c1[u]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w2 + j0 + 8 * u), c2[u]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(w3 + j0 + 8 * u), c3[u]);
      }
    }
  }
#endif
  for (int j = j0; j < groups; ++j) {
    const nm::Philox4x32 w = nm::random_words_for_group(key, first_group + uint64_t(j));
    w0[j] = w.v[0];
    w1[j] = w.v[1];
    w2[j] = w.v[2];
    w3[j] = w.v[3];
  }
  uint32_t* group_bits = bits + head;
#pragma omp simd
  for (int j = 0; j < groups; ++j) {
    group_bits[4 * j + 0] = w0[j];
    group_bits[4 * j + 1] = w1[j];
    group_bits[4 * j + 2] = w2[j];
    group_bits[4 * j + 3] = w3[j];
  }
  for (int i = head + 4 * groups; i < count; ++i) {
    bits[i] = nm::random_bits_for_element(key, global_begin + uint64_t(i));
  }
}

}  // namespace farthing::kernels

// optim_cpu_avx2.cpp — see optim_cpu_avx2.h.
#include "kernels/cpu/optim_cpu_avx2.h"

#include "kernels/cpu/block_quant_cpu_avx2.h"
#include "kernels/cpu/random_bits_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/master_remainder.h"

#include <type_traits>

namespace farthing::kernels {

#if defined(FARTHING_CPU_AVX2)

namespace nm = farthing::numerics;

namespace {

constexpr int kChunk = nm::kQuantBlockElems;

// numerics::f32_to_bf16_rne, eight lanes (result in the low 16 bits of each lane).
inline __m256i bf16_rne8(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(bits, 16);
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

// numerics::f32_to_bf16_sr, eight lanes.
inline __m256i bf16_sr8(__m256 x, __m256i random_bits) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(bits, 16);
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(bits, exp_mask), exp_mask);
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)), exp_mask);
  const __m256i special_value = _mm256_blendv_epi8(hi, _mm256_or_si256(hi, _mm256_set1_epi32(0x0040)), is_nan);
  // round up iff (r >> 16) < low16; both in [0, 0xFFFF]
  const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0xFFFF)),
                                        _mm256_srli_epi32(random_bits, 16));
  const __m256i rounded = _mm256_sub_epi32(hi, up);
  const __m256i became_inf =
      _mm256_cmpeq_epi32(_mm256_and_si256(rounded, _mm256_set1_epi32(0x7FFF)), _mm256_set1_epi32(0x7F80));
  const __m256i saturated =
      _mm256_or_si256(_mm256_and_si256(rounded, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(nm::kBf16MaxFinite));
  const __m256i finite_value = _mm256_blendv_epi8(rounded, saturated, became_inf);
  return _mm256_blendv_epi8(finite_value, special_value, special);
}

inline __m256i load_u16x8(const uint16_t* p) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline void store_u16x8(uint16_t* p, __m256i v) {  // lanes hold values in [0, 0xFFFF]
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

// The step's broadcast scalars.
struct Scalars8 {
  __m256 grad_scale, decay, lerp, beta2, one_minus_beta2, bc2, eps, neg_step;
  bool lerp_small;
  explicit Scalars8(const nm::AdamWScalars& s)
      : grad_scale(_mm256_set1_ps(s.grad_scale)),
        decay(_mm256_set1_ps(s.decay_factor)),
        lerp(_mm256_set1_ps(s.lerp_weight_small ? s.lerp_weight : s.lerp_weight_m1)),
        beta2(_mm256_set1_ps(s.beta2)),
        one_minus_beta2(_mm256_set1_ps(s.one_minus_beta2)),
        bc2(_mm256_set1_ps(s.bias_correction2_sqrt)),
        eps(_mm256_set1_ps(s.eps)),
        neg_step(_mm256_set1_ps(s.neg_step_size)),
        lerp_small(s.lerp_weight_small) {}
};

// numerics::adamw_update_element, operation by operation, on eight lanes (g is the raw
// gradient; returns the new p, updates m and v).
// nm::dequantize_with_absmax on 8 codes: map value times the block's absmax, NaN made canonical.
inline __m256 dequantize8(const float* map, const uint8_t* codes, __m256 absmax) {
  const __m256 value = _mm256_mul_ps(avx2::lookup8_codes(map, codes), absmax);
  const __m256 is_nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
  return _mm256_blendv_ps(value, _mm256_castsi256_ps(_mm256_set1_epi32(int(nm::kCanonicalNanBits))), is_nan);
}

template <bool lerp_small>
inline __m256 adamw_update8(const Scalars8& k, __m256 g, __m256 p_old, __m256& m, __m256& v) {
  g = _mm256_mul_ps(g, k.grad_scale);
  __m256 p = _mm256_mul_ps(p_old, k.decay);
  const __m256 diff = _mm256_sub_ps(g, m);
  m = lerp_small ? _mm256_fmadd_ps(k.lerp, diff, m) : _mm256_fmadd_ps(k.lerp, diff, g);
  v = _mm256_fmadd_ps(_mm256_mul_ps(k.one_minus_beta2, g), g, _mm256_mul_ps(v, k.beta2));
  const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), k.bc2), k.eps);
  return _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(k.neg_step, m), denom));
}

// The parameter before the step, eight lanes: the fp32 master (element `index` of master), the
// bf16 weight joined with its 16-bit remainder (numerics::master_combine), or the bf16 weight.
// w_old holds the eight weights zero-extended to 32 bits.
template <bool has_master, bool has_remainder>
inline __m256 load_p_old8(const float* master, const uint16_t* remainder, size_t index, __m256i w_old) {
  if constexpr (has_master) {
    return _mm256_loadu_ps(master + index);
  } else if constexpr (has_remainder) {
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    const __m256i r = load_u16x8(remainder + index);
    const __m256i high = _mm256_and_si256(_mm256_sub_epi32(w_old, _mm256_srli_epi32(r, 15)), low16);
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_slli_epi32(high, 16), r));
  } else {
    return _mm256_castsi256_ps(_mm256_slli_epi32(w_old, 16));
  }
}

// The parameter after the step, eight lanes: stores the fp32 master or the 16-bit remainder
// (numerics::master_split) at element `index`, and returns the new bf16 weights zero-extended
// to 32 bits (remainder split, stochastic with random_bits[0..7], or nearest-even).
template <bool has_master, bool has_remainder, bool stochastic>
inline __m256i store_p_new8(__m256 p, float* master, uint16_t* remainder, size_t index, const uint32_t* random_bits) {
  if constexpr (has_master) _mm256_storeu_ps(master + index, p);
  if constexpr (has_remainder) {
    const __m256i low16 = _mm256_set1_epi32(0xFFFF);
    const __m256i pb = _mm256_castps_si256(p);
    const __m256i low = _mm256_and_si256(pb, low16);
    store_u16x8(remainder + index, low);
    return _mm256_and_si256(_mm256_add_epi32(_mm256_srli_epi32(pb, 16), _mm256_srli_epi32(low, 15)), low16);
  } else if constexpr (stochastic) {
    return bf16_sr8(p, _mm256_load_si256(reinterpret_cast<const __m256i*>(random_bits)));
  } else {
    return bf16_rne8(p);
  }
}

// A scalar tail element after its update (the last partial group of eight): its diagnostics
// lane, its master (element `index` of master / remainder), and its new bf16 weight.
template <bool has_master, bool has_remainder, bool stochastic>
void finish_tail_element(float p, float p_old, uint16_t w_old, int i, uint32_t random_bits, float* master,
                         uint16_t* remainder, size_t index, uint16_t& weight, float* lane_u, float* lane_w,
                         int& unchanged) {
  const float du = p - p_old;
  lane_u[i & 7] += du * du;
  lane_w[i & 7] += p_old * p_old;
  uint16_t w;
  if constexpr (has_master) master[index] = p;
  if constexpr (has_remainder) {
    const nm::MasterSplit split = nm::master_split(p);
    w = split.weight;
    remainder[index] = split.remainder;
  } else if constexpr (stochastic) {
    w = nm::f32_to_bf16_sr(p, random_bits);
  } else {
    w = nm::f32_to_bf16_rne(p);
  }
  unchanged += w == w_old ? 1 : 0;
  weight = w;
}

void copy_out_lanes(const float* lane_u, const float* lane_w, int unchanged, AdamWChunkLanes& lanes) {
  for (int l = 0; l < 8; ++l) {
    lanes.update_ss[l] = lane_u[l];
    lanes.weight_ss[l] = lane_w[l];
  }
  lanes.unchanged = unchanged;
}

}  // namespace

// One instantiation per gradient format, master mode and rounding: no branches in the loops.

template <bool grad_f32, MasterMode mode, bool stochastic>
static void chunk_block8(const AdamWSegmentCpu& seg, size_t begin, int count, int64_t block, const nm::RandomKey& key,
                  AdamWChunkLanes& lanes) {
  constexpr bool has_master = mode == MasterMode::kF32;
  constexpr bool has_remainder = mode == MasterMode::kRemainder16;
  const nm::AdamWScalars s = seg.scalars;
  alignas(32) float m_new[kChunk + 32], v_new[kChunk + 32];
  alignas(32) uint32_t bits[kChunk];
  if constexpr (stochastic && !has_remainder) fill_random_bits_cpu(key, seg.global_offset + begin, count, bits);

  const float* map_m = seg.signed_map->values.data();
  const float* map_v = seg.unsigned_map->values.data();
  const float absmax_m_old = seg.m.absmax[block];
  const float absmax_v_old = seg.v.absmax[block];
  const uint8_t* codes_m = static_cast<const uint8_t*>(seg.m.values) + begin;
  const uint8_t* codes_v = static_cast<const uint8_t*>(seg.v.values) + begin;
  uint16_t* weight = seg.weight + begin;

  const __m256 am = _mm256_set1_ps(absmax_m_old), av = _mm256_set1_ps(absmax_v_old);
  const Scalars8 k(s);
  __m256i max_m = _mm256_setzero_si256(), max_v = _mm256_setzero_si256();
  __m256 acc_u = _mm256_setzero_ps(), acc_w = _mm256_setzero_ps();
  __m256i same = _mm256_setzero_si256();

  // Dequantization first, in its own pass: short independent chains of table loads, which
  // keeps the update loop below (one long div/sqrt chain per group) small enough for the
  // out-of-order window to overlap several groups.
  alignas(32) float m_old[kChunk], v_old[kChunk];
  const int whole = count & ~7;
  for (int j = 0; j < whole; j += 8) {
    _mm256_store_ps(m_old + j, dequantize8(map_m, codes_m + j, am));
    _mm256_store_ps(v_old + j, dequantize8(map_v, codes_v + j, av));
  }

  int i = 0;
  for (; i < whole; i += 8) {
    __m256 g;  // the raw gradient
    if constexpr (grad_f32) {
      g = _mm256_loadu_ps(static_cast<const float*>(seg.grad) + begin + i);
    } else {
      g = _mm256_castsi256_ps(_mm256_slli_epi32(load_u16x8(static_cast<const uint16_t*>(seg.grad) + begin + i), 16));
    }
    const __m256i w_old = load_u16x8(weight + i);
    const __m256 p_old = load_p_old8<has_master, has_remainder>(seg.master, seg.remainder, begin + i, w_old);
    __m256 m = _mm256_load_ps(m_old + i);
    __m256 v = _mm256_load_ps(v_old + i);

    const __m256 p = k.lerp_small ? adamw_update8<true>(k, g, p_old, m, v) : adamw_update8<false>(k, g, p_old, m, v);

    _mm256_store_ps(m_new + i, m);
    _mm256_store_ps(v_new + i, v);
    max_m = avx2::absmax_bits_update(max_m, m);
    max_v = avx2::absmax_bits_update(max_v, v);
    const __m256 du = _mm256_sub_ps(p, p_old);
    acc_u = _mm256_add_ps(acc_u, _mm256_mul_ps(du, du));
    acc_w = _mm256_add_ps(acc_w, _mm256_mul_ps(p_old, p_old));

    const __m256i w = store_p_new8<has_master, has_remainder, stochastic>(p, seg.master, seg.remainder, begin + i,
                                                                         bits + i);
    same = _mm256_sub_epi32(same, _mm256_cmpeq_epi32(w, w_old));
    store_u16x8(weight + i, w);
  }
  alignas(32) float lane_u[8], lane_w[8];
  alignas(32) int32_t lane_same[8];
  _mm256_store_ps(lane_u, acc_u);
  _mm256_store_ps(lane_w, acc_w);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_same), same);
  uint32_t max_m_bits = avx2::hmax_epu32(max_m), max_v_bits = avx2::hmax_epu32(max_v);
  int unchanged = 0;
  for (int l = 0; l < 8; ++l) unchanged += lane_same[l];

  // The last partial group of eight: the scalar definitions, element by element.
  for (; i < count; ++i) {
    const size_t e = begin + size_t(i);
    const float g = grad_f32 ? static_cast<const float*>(seg.grad)[e]
                             : nm::bf16_to_f32(static_cast<const uint16_t*>(seg.grad)[e]);
    const uint16_t w_old = weight[i];
    const float p_old = has_master      ? seg.master[e]
                        : has_remainder ? nm::master_combine(w_old, seg.remainder[e])
                                        : nm::bf16_to_f32(w_old);
    float p = p_old;
    float m = nm::dequantize_with_absmax(map_m, codes_m[i], absmax_m_old);
    float v = nm::dequantize_with_absmax(map_v, codes_v[i], absmax_v_old);
    nm::adamw_update_element(s, g, p, m, v);
    m_new[i] = m;
    v_new[i] = v;
    const uint32_t mb = nm::f32_to_bits(m) & 0x7FFFFFFFu, vb = nm::f32_to_bits(v) & 0x7FFFFFFFu;
    max_m_bits = mb > max_m_bits ? mb : max_m_bits;
    max_v_bits = vb > max_v_bits ? vb : max_v_bits;
    finish_tail_element<has_master, has_remainder, stochastic>(p, p_old, w_old, i, bits[i], seg.master,
                                                                 seg.remainder, e, weight[i], lane_u, lane_w, unchanged);
  }
  copy_out_lanes(lane_u, lane_w, unchanged, lanes);

  // Requantize with the new absmax (block_quantize_one_cpu's rules; the rare zero, NaN or
  // inf blocks, and maps without a valid unit table, take the portable code).
  const auto quantize = [&](const MomentRef& moment, const QuantMapCpu& map, const float* x, uint32_t max_bits) {
    uint8_t* codes = static_cast<uint8_t*>(moment.values) + begin;
    const float block_max = nm::bits_to_f32(max_bits);
    if (map.unit_valid && block_max > 0.0f && block_max <= 3.4028235e38f) {
      avx2::quantize_block_unit(map, x, count, block_max, codes);
      moment.absmax[block] = block_max;
    } else {
      moment.absmax[block] = block_quantize_one_portable_cpu(map, x, count, codes);
    }
  };
  quantize(seg.m, *seg.signed_map, m_new, max_m_bits);
  quantize(seg.v, *seg.unsigned_map, v_new, max_v_bits);
}

// Moments stored as fp32 or bf16 (both the same format): one pass, every element in
// registers from its loads to its stores, no chunk buffers (only the random bits for SR).
template <bool grad_f32, bool moments_f32, MasterMode mode, bool stochastic>
static void chunk_dense(const AdamWSegmentCpu& seg, size_t begin, int count, const nm::RandomKey& key,
                        AdamWChunkLanes& lanes) {
  constexpr bool has_master = mode == MasterMode::kF32;
  constexpr bool has_remainder = mode == MasterMode::kRemainder16;
  const nm::AdamWScalars s = seg.scalars;
  alignas(32) uint32_t bits[kChunk];
  if constexpr (stochastic && !has_remainder) fill_random_bits_cpu(key, seg.global_offset + begin, count, bits);
  using Moment = std::conditional_t<moments_f32, float, uint16_t>;
  Moment* const mp = static_cast<Moment*>(seg.m.values) + begin;
  Moment* const vp = static_cast<Moment*>(seg.v.values) + begin;
  const float* const grad32 = static_cast<const float*>(seg.grad) + begin;
  const uint16_t* const grad16 = static_cast<const uint16_t*>(seg.grad) + begin;
  float* const master = has_master ? seg.master + begin : nullptr;
  uint16_t* const remainder = has_remainder ? seg.remainder + begin : nullptr;
  uint16_t* const weight = seg.weight + begin;

  const Scalars8 k(s);
  __m256 acc_u = _mm256_setzero_ps(), acc_w = _mm256_setzero_ps();
  __m256i same = _mm256_setzero_si256();
  const auto load_moment8 = [](const Moment* p) {
    if constexpr (moments_f32) {
      return _mm256_loadu_ps(p);
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(load_u16x8(p), 16));
    }
  };
  const auto body = [&]<bool lerp_small>(int i) {
    __m256 g;  // the raw gradient
    if constexpr (grad_f32) {
      g = _mm256_loadu_ps(grad32 + i);
    } else {
      g = _mm256_castsi256_ps(_mm256_slli_epi32(load_u16x8(grad16 + i), 16));
    }
    const __m256i w_old = load_u16x8(weight + i);
    const __m256 p_old = load_p_old8<has_master, has_remainder>(master, remainder, size_t(i), w_old);
    __m256 m = load_moment8(mp + i);
    __m256 v = load_moment8(vp + i);
    const __m256 p = adamw_update8<lerp_small>(k, g, p_old, m, v);
    if constexpr (moments_f32) {
      _mm256_storeu_ps(mp + i, m);
      _mm256_storeu_ps(vp + i, v);
    } else {  // numerics::f32_to_bf16_rne, as store_moment; m and v packed by one vpackusdw
      const __m256i mv = _mm256_permute4x64_epi64(_mm256_packus_epi32(bf16_rne8(m), bf16_rne8(v)), 0xD8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(mp + i), _mm256_castsi256_si128(mv));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(vp + i), _mm256_extracti128_si256(mv, 1));
    }
    const __m256 du = _mm256_sub_ps(p, p_old);
    acc_u = _mm256_add_ps(acc_u, _mm256_mul_ps(du, du));
    acc_w = _mm256_add_ps(acc_w, _mm256_mul_ps(p_old, p_old));
    const __m256i w = store_p_new8<has_master, has_remainder, stochastic>(p, master, remainder, size_t(i), bits + i);
    same = _mm256_sub_epi32(same, _mm256_cmpeq_epi32(w, w_old));
    store_u16x8(weight + i, w);
  };
  const int whole = count & ~7;
  int i = 0;
  if (k.lerp_small) {
    for (; i < whole; i += 8) body.template operator()<true>(i);
  } else {
    for (; i < whole; i += 8) body.template operator()<false>(i);
  }
  alignas(32) float lane_u[8], lane_w[8];
  alignas(32) int32_t lane_same[8];
  _mm256_store_ps(lane_u, acc_u);
  _mm256_store_ps(lane_w, acc_w);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_same), same);
  int unchanged = 0;
  for (int l = 0; l < 8; ++l) unchanged += lane_same[l];

  // The last partial group of eight: the scalar definitions, element by element.
  for (; i < count; ++i) {
    const float g = grad_f32 ? grad32[i] : nm::bf16_to_f32(grad16[i]);
    const uint16_t w_old = weight[i];
    const float p_old = has_master      ? master[i]
                        : has_remainder ? nm::master_combine(w_old, remainder[i])
                                        : nm::bf16_to_f32(w_old);
    float p = p_old;
    float m, v;
    if constexpr (moments_f32) {
      m = mp[i];
      v = vp[i];
    } else {
      m = nm::bf16_to_f32(mp[i]);
      v = nm::bf16_to_f32(vp[i]);
    }
    nm::adamw_update_element(s, g, p, m, v);
    if constexpr (moments_f32) {
      mp[i] = m;
      vp[i] = v;
    } else {
      mp[i] = nm::f32_to_bf16_rne(m);
      vp[i] = nm::f32_to_bf16_rne(v);
    }
    finish_tail_element<has_master, has_remainder, stochastic>(p, p_old, w_old, i, bits[i], master, remainder,
                                                                 size_t(i), weight[i], lane_u, lane_w, unchanged);
  }
  copy_out_lanes(lane_u, lane_w, unchanged, lanes);
}

template <bool grad_f32, bool moments_f32>
static void chunk_dense_for_mode(const AdamWSegmentCpu& seg, size_t begin, int count, bool stochastic,
                                 const nm::RandomKey& key, AdamWChunkLanes& lanes) {
  switch (seg.master_mode) {
    case MasterMode::kF32:
      if (stochastic) {
        chunk_dense<grad_f32, moments_f32, MasterMode::kF32, true>(seg, begin, count, key, lanes);
      } else {
        chunk_dense<grad_f32, moments_f32, MasterMode::kF32, false>(seg, begin, count, key, lanes);
      }
      return;
    case MasterMode::kRemainder16:
      chunk_dense<grad_f32, moments_f32, MasterMode::kRemainder16, false>(seg, begin, count, key, lanes);
      return;
    case MasterMode::kNone:
      if (stochastic) {
        chunk_dense<grad_f32, moments_f32, MasterMode::kNone, true>(seg, begin, count, key, lanes);
      } else {
        chunk_dense<grad_f32, moments_f32, MasterMode::kNone, false>(seg, begin, count, key, lanes);
      }
      return;
  }
}

bool adamw_chunk_dense_avx2(const AdamWSegmentCpu& seg, size_t begin, int count, bool stochastic,
                            const nm::RandomKey& key, AdamWChunkLanes& lanes) {
  const bool moments_f32 = seg.m.format == MomentFormat::kF32;
  if (seg.grad_format == GradFormat::kF32) {
    if (moments_f32) {
      chunk_dense_for_mode<true, true>(seg, begin, count, stochastic, key, lanes);
    } else {
      chunk_dense_for_mode<true, false>(seg, begin, count, stochastic, key, lanes);
    }
  } else {
    if (moments_f32) {
      chunk_dense_for_mode<false, true>(seg, begin, count, stochastic, key, lanes);
    } else {
      chunk_dense_for_mode<false, false>(seg, begin, count, stochastic, key, lanes);
    }
  }
  return true;
}

template <bool grad_f32>
static void chunk_block8_for_grad(const AdamWSegmentCpu& seg, size_t begin, int count, int64_t block, bool stochastic,
                           const nm::RandomKey& key, AdamWChunkLanes& lanes) {
  switch (seg.master_mode) {
    case MasterMode::kF32:
      if (stochastic) {
        chunk_block8<grad_f32, MasterMode::kF32, true>(seg, begin, count, block, key, lanes);
      } else {
        chunk_block8<grad_f32, MasterMode::kF32, false>(seg, begin, count, block, key, lanes);
      }
      return;
    case MasterMode::kRemainder16:  // the remainder split is the rounding (no SR)
      chunk_block8<grad_f32, MasterMode::kRemainder16, false>(seg, begin, count, block, key, lanes);
      return;
    case MasterMode::kNone:
      if (stochastic) {
        chunk_block8<grad_f32, MasterMode::kNone, true>(seg, begin, count, block, key, lanes);
      } else {
        chunk_block8<grad_f32, MasterMode::kNone, false>(seg, begin, count, block, key, lanes);
      }
      return;
  }
}

bool adamw_chunk_block8_avx2(const AdamWSegmentCpu& seg, size_t begin, int count, int64_t block, bool stochastic,
                             const nm::RandomKey& key, AdamWChunkLanes& lanes) {
  if (seg.grad_format == GradFormat::kF32) {
    chunk_block8_for_grad<true>(seg, begin, count, block, stochastic, key, lanes);
  } else {
    chunk_block8_for_grad<false>(seg, begin, count, block, stochastic, key, lanes);
  }
  return true;
}

#else

bool adamw_chunk_dense_avx2(const AdamWSegmentCpu&, size_t, int, bool, const numerics::RandomKey&, AdamWChunkLanes&) {
  return false;
}

bool adamw_chunk_block8_avx2(const AdamWSegmentCpu&, size_t, int, int64_t, bool, const numerics::RandomKey&,
                             AdamWChunkLanes&) {
  return false;
}

#endif

}  // namespace farthing::kernels

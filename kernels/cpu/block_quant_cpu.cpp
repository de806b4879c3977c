// block_quant_cpu.cpp — see block_quant_cpu.h.
#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/cpu/block_quant_cpu_avx2.h"

#include <algorithm>
#include <cmath>

#include "kernels/numerics/block_quant.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr uint32_t kBuckets = 1u << 16;
constexpr uint32_t kUnitBuckets = 1u << 15;

// The bucket's floats ordered by value: for a positive bucket, low bits 0 .. 0xFFFF ascend;
// for a negative one they descend. value_at(k) is the k-th smallest float of the bucket.
float bucket_value(uint32_t bucket, uint32_t k) {
  const bool negative = (bucket & 0x8000u) != 0;
  return nm::bits_to_f32((bucket << 16) | (negative ? 0xFFFFu - k : k));
}

}  // namespace

QuantMapCpu make_quant_map_cpu(nm::MapSign sign) {
  QuantMapCpu map;
  map.values = nm::make_dynamic_map(sign);
  map.is_signed = sign == nm::MapSign::kSigned;
  map.base.assign(kBuckets, 0);
  map.threshold.assign(kBuckets, INFINITY);
  map.use_search.assign(kBuckets, 0);
  const float* values = map.values.data();
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t b = 0; b < int64_t(kBuckets); ++b) {
    const uint32_t bucket = uint32_t(b);
    if (((bucket >> 7) & 0xFFu) == 0xFFu) {  // inf and NaN buckets
      map.use_search[bucket] = 1;
      continue;
    }
    const uint8_t low = nm::dynamic_map_nearest(values, bucket_value(bucket, 0));
    const uint8_t high = nm::dynamic_map_nearest(values, bucket_value(bucket, 0xFFFF));
    map.base[bucket] = low;
    if (high == low) continue;
    if (high != low + 1) {  // more than one switch inside the bucket
      map.use_search[bucket] = 1;
      continue;
    }
    // Largest k whose value still gives `low`: the switch is right after it.
    uint32_t lo = 0, hi = 0xFFFF;  // invariant: f(value(lo)) == low, f(value(hi)) == high
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      (nm::dynamic_map_nearest(values, bucket_value(bucket, mid)) == low ? lo : hi) = mid;
    }
    map.threshold[bucket] = bucket_value(bucket, lo);
  }
  map.unit.assign(kUnitBuckets, 0);
  bool valid = true;
  for (uint32_t i = 0; i < kUnitBuckets; ++i) {
    const uint32_t bucket = (i & 0x3FFFu) | ((i & 0x4000u) << 1);
    const bool in_range = (bucket & 0x7FFFu) <= 0x3F80u;  // holds some y with |y| <= 1
    const bool negative = (bucket & 0x8000u) != 0;
    const float t = map.threshold[bucket];
    uint32_t key = 0xFFFFu;
    if (t != INFINITY) {
      const uint32_t t_bits = nm::f32_to_bits(t);
      if ((t_bits >> 16) != bucket) valid = false;
      key = (t_bits & 0xFFFFu) ^ (negative ? 0xFFFFu : 0u);
      // key == 0xFFFF would read as "never": impossible, as the threshold is not the
      // bucket's largest float (the switch lies inside the bucket).
      if (key == 0xFFFFu) valid = false;
    }
    if (in_range && (map.use_search[bucket] || map.base[bucket] < 0 || map.base[bucket] > 255)) valid = false;
    map.unit[i] = uint32_t(map.base[bucket] & 0xFF) | (key << 8);
  }
  map.unit_valid = valid;
  if (valid) {
    map.unit_codes.assign(kBuckets, 0);
    const auto fixed = [&](int code, bool x_negative) {
      const bool code_negative = code < int(nm::kSignedMapZeroCode);
      return uint32_t(uint8_t(map.is_signed && code_negative != x_negative ? (x_negative ? code - 1 : code + 1) : code));
    };
    for (uint32_t bucket = 0; bucket < kBuckets; ++bucket) {
      if ((bucket & 0x7FFFu) > 0x3F80u) continue;  // |y| > 1: never read
      const uint32_t e = map.unit[quant_map_unit_index(bucket << 16)];
      const int base = int(e & 0xFFu);
      const uint32_t t = e >> 8;
      const bool x_negative = (bucket & 0x8000u) != 0;
      const uint32_t below = fixed(base, x_negative);
      const uint32_t above = t == 0xFFFFu ? below : fixed(base + 1, x_negative);
      map.unit_codes[bucket] = t | (below << 16) | (above << 24);
    }
  }
  return map;
}

uint8_t quant_map_lookup_unit(const QuantMapCpu& map, float y) {
  const uint32_t bits = nm::f32_to_bits(y);
  const uint32_t e = map.unit[quant_map_unit_index(bits)];
  const uint32_t key = (bits & 0xFFFFu) ^ ((bits >> 31) != 0 ? 0xFFFFu : 0u);
  return uint8_t((e & 0xFFu) + (key > (e >> 8) ? 1u : 0u));
}

uint8_t quant_map_lookup(const QuantMapCpu& map, float y) {
  const uint32_t bucket = nm::f32_to_bits(y) >> 16;
  if (map.use_search[bucket]) return nm::dynamic_map_nearest(map.values.data(), y);
  return uint8_t(map.base[bucket] + (y > map.threshold[bucket] ? 1 : 0));
}

float block_quantize_one_cpu(const QuantMapCpu& map, const float* x, int count, uint8_t* out) {
#if defined(FARTHING_CPU_AVX2)
  if (map.unit_valid) {
    const float block_max = nm::block_absmax(x, count);
    if (block_max > 0.0f && block_max <= 3.4028235e38f) {
      avx2::quantize_block_unit(map, x, count, block_max, out);
      return block_max;
    }
  }
#endif
  return block_quantize_one_portable_cpu(map, x, count, out);
}

float block_quantize_one_portable_cpu(const QuantMapCpu& map, const float* x, int count, uint8_t* out) {
  const int32_t* base = map.base.data();
  const float* threshold = map.threshold.data();
  const bool is_signed = map.is_signed;
  const float block_max = nm::block_absmax(x, count);
  if (!(block_max > 0.0f && block_max <= 3.4028235e38f)) {
    // Zero, NaN or inf absmax: the scalar definition handles these rare blocks.
    for (int i = 0; i < count; ++i) out[i] = nm::quantize_with_absmax(map.values.data(), is_signed, x[i], block_max);
    return block_max;
  }
  // |x| <= absmax, so every y lies in [-1, 1], where the table has no search buckets
  // (checked by tests/numerics/test_block_quant.cpp).
  if (map.unit_valid) {
    // One packed word per element instead of two table reads; integer compare of the low
    // bits in place of the float compare (tests/numerics/test_block_quant.cpp: CpuUnitTableEqualsTheSearch).
    const uint32_t* unit = map.unit.data();
#pragma omp simd
    for (int i = 0; i < count; ++i) {
      const float y = x[i] / block_max;
      const uint32_t bits = nm::f32_to_bits(y);
      const uint32_t e = unit[quant_map_unit_index(bits)];
      const uint32_t key = (bits & 0xFFFFu) ^ ((bits >> 31) != 0 ? 0xFFFFu : 0u);
      int code = int(e & 0xFFu) + (key > (e >> 8) ? 1 : 0);
      const bool code_negative = code < int(nm::kSignedMapZeroCode);
      const bool x_negative = (nm::f32_to_bits(x[i]) >> 31) != 0;
      code = is_signed && code_negative != x_negative ? (x_negative ? code - 1 : code + 1) : code;
      out[i] = uint8_t(code);
    }
    return block_max;
  }
#pragma omp simd
  for (int i = 0; i < count; ++i) {
    const float y = x[i] / block_max;
    const uint32_t bucket = nm::f32_to_bits(y) >> 16;
    int code = base[bucket] + (y > threshold[bucket] ? 1 : 0);
    // The sign fix of numerics::quantize_with_absmax: codes below 127 are the negatives.
    const bool code_negative = code < int(nm::kSignedMapZeroCode);
    const bool x_negative = (nm::f32_to_bits(x[i]) >> 31) != 0;
    code = is_signed && code_negative != x_negative ? (x_negative ? code - 1 : code + 1) : code;
    out[i] = uint8_t(code);
  }
  return block_max;
}

void block_quantize_cpu(const QuantMapCpu& map, const float* src, uint8_t* codes, float* absmax, size_t n) {
  const int64_t blocks = int64_t((n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = size_t(b) * nm::kQuantBlockElems;
    const int count = int(std::min<size_t>(nm::kQuantBlockElems, n - begin));
    absmax[b] = block_quantize_one_cpu(map, src + begin, count, codes + begin);
  }
}

void block_dequantize_cpu(const QuantMapCpu& map, const uint8_t* codes, const float* absmax, float* dst,
                          size_t n) {
  const float* values = map.values.data();
  const int64_t blocks = int64_t((n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = size_t(b) * nm::kQuantBlockElems;
    const int count = int(std::min<size_t>(nm::kQuantBlockElems, n - begin));
    const float block_max = absmax[b];
#pragma omp simd
    for (int i = 0; i < count; ++i) {
      dst[begin + size_t(i)] = nm::dequantize_with_absmax(values, codes[begin + size_t(i)], block_max);
    }
  }
}

}  // namespace farthing::kernels

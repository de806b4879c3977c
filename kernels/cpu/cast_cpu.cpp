// cast_cpu.cpp — see cast_cpu.h.
#include "kernels/cpu/cast_cpu.h"

#include <algorithm>

#include "kernels/numerics/bf16.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

template <class Out, class Fn>
void map_elements(const float* src, Out* dst, size_t n, Fn fn) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}

template <class In, class Fn>
void widen_elements(const In* src, float* dst, size_t n, Fn fn) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}

// Stochastic rounding walks the global index space in Philox groups of four elements, so one
// generator call serves four elements. The partial groups at either end are done one element
// at a time with random_bits_for_element, which gives the same bits; the whole groups in
// between form a branch-free loop that vectorizes.
template <class Out, class Fn>
void map_elements_sr(const float* src, Out* dst, size_t n, nm::RandomKey key,
                     uint64_t global_offset, Fn fn) {
  const size_t head = std::min<size_t>(n, size_t((4 - (global_offset & 3)) & 3));
  for (size_t i = 0; i < head; ++i) {
    dst[i] = fn(src[i], nm::random_bits_for_element(key, global_offset + i));
  }
  const int64_t groups = int64_t((n - head) / 4);
  const uint64_t first_group = (global_offset + head) >> 2;
  const float* group_src = src + head;
  Out* group_dst = dst + head;
  // Chunks of groups: generate the words of a chunk in one vectorized pass (structure of
  // arrays), interleave them into per-element order, then round the chunk's elements.
  constexpr int64_t kChunkGroups = 256;
  const int64_t chunks = (groups + kChunkGroups - 1) / kChunkGroups;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    alignas(64) uint32_t w0[kChunkGroups], w1[kChunkGroups], w2[kChunkGroups], w3[kChunkGroups];
    alignas(64) uint32_t bits[4 * kChunkGroups];
    const int64_t g0 = c * kChunkGroups;
    const int count = int(std::min(kChunkGroups, groups - g0));
#pragma omp simd
    for (int j = 0; j < count; ++j) {
      const nm::Philox4x32 w = nm::random_words_for_group(key, first_group + uint64_t(g0 + j));
      w0[j] = w.v[0];
      w1[j] = w.v[1];
      w2[j] = w.v[2];
      w3[j] = w.v[3];
    }
#pragma omp simd
    for (int j = 0; j < count; ++j) {
      bits[4 * j + 0] = w0[j];
      bits[4 * j + 1] = w1[j];
      bits[4 * j + 2] = w2[j];
      bits[4 * j + 3] = w3[j];
    }
    const float* chunk_src = group_src + size_t(g0) * 4;
    Out* chunk_dst = group_dst + size_t(g0) * 4;
#pragma omp simd
    for (int i = 0; i < 4 * count; ++i) chunk_dst[i] = fn(chunk_src[i], bits[i]);
  }
  for (size_t i = head + size_t(groups) * 4; i < n; ++i) {
    dst[i] = fn(src[i], nm::random_bits_for_element(key, global_offset + i));
  }
}

}  // namespace

void cast_f32_to_narrow_cpu(NarrowFormat format, const float* src, void* dst, size_t n,
                            nm::Overflow overflow) {
  switch (format) {
    case NarrowFormat::kBf16:
      return map_elements(src, static_cast<uint16_t*>(dst), n, [](float x) { return nm::f32_to_bf16_rne(x); });
    case NarrowFormat::kFp16:
      return map_elements(src, static_cast<uint16_t*>(dst), n, [](float x) { return nm::f32_to_fp16_rne(x); });
    case NarrowFormat::kE4M3:
      return map_elements(src, static_cast<uint8_t*>(dst), n, [overflow](float x) { return nm::f32_to_e4m3(x, overflow); });
    case NarrowFormat::kE5M2:
      return map_elements(src, static_cast<uint8_t*>(dst), n, [overflow](float x) { return nm::f32_to_e5m2(x, overflow); });
  }
}

void cast_f32_to_narrow_sr_cpu(NarrowFormat format, const float* src, void* dst, size_t n,
                               nm::RandomKey key, uint64_t global_offset) {
  switch (format) {
    case NarrowFormat::kBf16:
      return map_elements_sr(src, static_cast<uint16_t*>(dst), n, key, global_offset,
                             [](float x, uint32_t r) { return nm::f32_to_bf16_sr(x, r); });
    case NarrowFormat::kFp16:
      return map_elements_sr(src, static_cast<uint16_t*>(dst), n, key, global_offset,
                             [](float x, uint32_t r) { return nm::f32_to_fp16_sr(x, r); });
    case NarrowFormat::kE4M3:
      return map_elements_sr(src, static_cast<uint8_t*>(dst), n, key, global_offset,
                             [](float x, uint32_t r) { return nm::f32_to_e4m3_sr(x, r); });
    case NarrowFormat::kE5M2:
      return map_elements_sr(src, static_cast<uint8_t*>(dst), n, key, global_offset,
                             [](float x, uint32_t r) { return nm::f32_to_e5m2_sr(x, r); });
  }
}

void cast_narrow_to_f32_cpu(NarrowFormat format, const void* src, float* dst, size_t n) {
  switch (format) {
    case NarrowFormat::kBf16:
      return widen_elements(static_cast<const uint16_t*>(src), dst, n, [](uint16_t h) { return nm::bf16_to_f32(h); });
    case NarrowFormat::kFp16:
      return widen_elements(static_cast<const uint16_t*>(src), dst, n, [](uint16_t h) { return nm::fp16_to_f32(h); });
    case NarrowFormat::kE4M3:
      return widen_elements(static_cast<const uint8_t*>(src), dst, n, [](uint8_t c) { return nm::e4m3_to_f32(c); });
    case NarrowFormat::kE5M2:
      return widen_elements(static_cast<const uint8_t*>(src), dst, n, [](uint8_t c) { return nm::e5m2_to_f32(c); });
  }
}

}  // namespace farthing::kernels

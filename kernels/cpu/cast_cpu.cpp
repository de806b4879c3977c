// cast_cpu.cpp — see cast_cpu.h.
#include "kernels/cpu/cast_cpu.h"
#include "kernels/cpu/random_bits_cpu.h"

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

// Stochastic rounding in runs of kRandomBitsChunk elements: the run's random bits first
// (fill_random_bits_cpu gives exactly random_bits_for_element's bits), then a vectorized
// rounding loop. Runs are split over threads; no element's result depends on the split.
template <class Out, class Fn>
void map_elements_sr(const float* src, Out* dst, size_t n, nm::RandomKey key,
                     uint64_t global_offset, Fn fn) {
  const int64_t runs = int64_t((n + kRandomBitsChunk - 1) / kRandomBitsChunk);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < runs; ++r) {
    const size_t begin = size_t(r) * kRandomBitsChunk;
    const int count = int(std::min<size_t>(kRandomBitsChunk, n - begin));
    alignas(64) uint32_t bits[kRandomBitsChunk];
    fill_random_bits_cpu(key, global_offset + begin, count, bits);
    const float* run_src = src + begin;
    Out* run_dst = dst + begin;
#pragma omp simd
    for (int i = 0; i < count; ++i) run_dst[i] = fn(run_src[i], bits[i]);
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

// optim_cpu.cpp — see optim_cpu.h.
#include "kernels/cpu/optim_cpu.h"
#include "kernels/cpu/block_quant_cpu_avx2.h"
#include "kernels/cpu/optim_cpu_avx2.h"
#include "kernels/cpu/random_bits_cpu.h"

#include <algorithm>

#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr int kChunk = nm::kQuantBlockElems;  // 256: one 8-bit block per chunk


// begin is relative to the segment, whose element 0 starts a block for the blocked formats.
void load_moment(const MomentRef& moment, const QuantMapCpu* map, const float* map4, size_t begin, int count,
                 int64_t block, float* out) {
  switch (moment.format) {
    case MomentFormat::kF32: {
      const float* src = static_cast<const float*>(moment.values) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) out[i] = src[i];
      return;
    }
    case MomentFormat::kBf16: {
      const uint16_t* src = static_cast<const uint16_t*>(moment.values) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) out[i] = nm::bf16_to_f32(src[i]);
      return;
    }
    case MomentFormat::kBlock8: {
      const uint8_t* codes = static_cast<const uint8_t*>(moment.values) + begin;
      const float* values = map->values.data();
      const float absmax = moment.absmax[block];
#pragma omp simd
      for (int i = 0; i < count; ++i) out[i] = nm::dequantize_with_absmax(values, codes[i], absmax);
      return;
    }
    case MomentFormat::kBlock4: {
      const uint8_t* packed = static_cast<const uint8_t*>(moment.values);
#pragma omp simd
      for (int i = 0; i < count; ++i) {
        const size_t e = begin + size_t(i);
        const int code = (packed[e >> 1] >> ((e & 1) * 4)) & 0xF;
        out[i] = map4[code] * moment.absmax[e / nm::kQuant4BlockElems];
      }
      return;
    }
  }
}

// NOTE: bf16 moments are stored round-to-nearest-even (torchao's bf16 state does the same);
// stochastic rounding of the moments is not needed for the weights' unbiasedness.
void store_moment(const MomentRef& moment, const QuantMapCpu* map, const float* map4, size_t begin, int count,
                  int64_t block, const float* in, bool portable) {
  switch (moment.format) {
    case MomentFormat::kF32: {
      float* dst = static_cast<float*>(moment.values) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) dst[i] = in[i];
      return;
    }
    case MomentFormat::kBf16: {
      uint16_t* dst = static_cast<uint16_t*>(moment.values) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) dst[i] = nm::f32_to_bf16_rne(in[i]);
      return;
    }
    case MomentFormat::kBlock8:
      moment.absmax[block] = portable
                                 ? block_quantize_one_portable_cpu(*map, in, count, static_cast<uint8_t*>(moment.values) + begin)
                                 : block_quantize_one_cpu(*map, in, count, static_cast<uint8_t*>(moment.values) + begin);
      return;
    case MomentFormat::kBlock4: {
      // begin is a multiple of 256 here, so the chunk holds whole 128-blocks (the last may be
      // short) and whole bytes (the last may hold one code, high nibble 0).
      uint8_t* packed = static_cast<uint8_t*>(moment.values) + begin / 2;
      alignas(64) uint8_t codes[kChunk];
      for (int sub = 0; sub * nm::kQuant4BlockElems < count; ++sub) {
        const int off = sub * nm::kQuant4BlockElems;
        const int n = std::min(nm::kQuant4BlockElems, count - off);
        const float absmax = nm::block_absmax(in + off, n);
        moment.absmax[begin / nm::kQuant4BlockElems + size_t(sub)] = absmax;
#pragma omp simd
        for (int i = 0; i < n; ++i) codes[off + i] = nm::quantize4_with_absmax(map4, in[off + i], absmax);
      }
      if (count & 1) codes[count] = 0;
#pragma omp simd
      for (int j = 0; j < (count + 1) / 2; ++j) packed[j] = uint8_t(codes[2 * j] | (codes[2 * j + 1] << 4));
      return;
    }
  }
}

// The chunk's diagnostics sum from its eight lanes (element i of the chunk went into lane
// i % 8), in a fixed order: what both the portable and the AVX2 loops produce.
float sum_lanes(const float* lane) {
  return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

}  // namespace

bool adamw_step_cpu_has_avx2() {
#if defined(FARTHING_CPU_AVX2)
  return true;
#else
  return false;
#endif
}

AdamWPartials adamw_step_cpu(const AdamWSegmentCpu& given, CpuKernelPath path) {
  AdamWSegmentCpu seg = given;
  if (!scalars_for_step(given, seg.scalars)) return AdamWPartials{};  // non-finite gradients: nothing changes
  const uint64_t lead = seg.global_offset % uint64_t(kChunk);
  const int64_t chunks = int64_t((seg.n + lead + kChunk - 1) / kChunk);
  const bool has_master = seg.master_mode == MasterMode::kF32;
  const bool has_remainder = seg.master_mode == MasterMode::kRemainder16;
  const bool stochastic = !has_remainder && seg.weight_rounding == WeightRounding::kStochastic;
  const nm::RandomKey key{seg.seed, seg.step,
                          has_master ? nm::RandomPurpose::kWeightCast : nm::RandomPurpose::kMasterFreeUpdate};
  const nm::AdamWScalars s = seg.scalars;
  const bool portable = path == CpuKernelPath::kPortable;
  const bool vector_block8 = !portable && adamw_step_cpu_has_avx2() && seg.m.format == MomentFormat::kBlock8 &&
                             seg.v.format == MomentFormat::kBlock8;
  const bool vector_dense = !portable && adamw_step_cpu_has_avx2() && seg.m.format == seg.v.format &&
                            (seg.m.format == MomentFormat::kF32 || seg.m.format == MomentFormat::kBf16);
  int64_t unchanged = 0;
  double update_ss = 0.0, weight_ss = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : unchanged, update_ss, weight_ss)
  for (int64_t c = 0; c < chunks; ++c) {
    // Chunk c covers global [c*256 - lead, (c+1)*256 - lead) of the segment, clipped to it;
    // for 8-bit moments lead is 0 and chunk c is block c.
    const size_t begin = c == 0 ? 0 : size_t(uint64_t(c) * kChunk - lead);
    const size_t end = std::min(seg.n, size_t(uint64_t(c + 1) * kChunk - lead));
    const int count = int(end - begin);
    if (vector_block8) {
      AdamWChunkLanes lanes;
      adamw_chunk_block8_avx2(seg, begin, count, c, stochastic, key, lanes);
      update_ss += double(sum_lanes(lanes.update_ss));
      weight_ss += double(sum_lanes(lanes.weight_ss));
      unchanged += lanes.unchanged;
      continue;
    }
    if (vector_dense) {
      AdamWChunkLanes lanes;
      adamw_chunk_dense_avx2(seg, begin, count, stochastic, key, lanes);
      update_ss += double(sum_lanes(lanes.update_ss));
      weight_ss += double(sum_lanes(lanes.weight_ss));
      unchanged += lanes.unchanged;
      continue;
    }
    alignas(64) float g[kChunk], p[kChunk], p_old[kChunk], m[kChunk], v[kChunk];
    alignas(64) uint32_t bits[kChunk];

    if (seg.grad_format == GradFormat::kF32) {
      const float* src = static_cast<const float*>(seg.grad) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) g[i] = src[i];
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(seg.grad) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) g[i] = nm::bf16_to_f32(src[i]);
    }
    uint16_t* weight = seg.weight + begin;
    if (has_master) {
      const float* master = seg.master + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) p_old[i] = master[i];
    } else if (has_remainder) {
      const uint16_t* remainder = seg.remainder + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) p_old[i] = nm::master_combine(weight[i], remainder[i]);
    } else {
#pragma omp simd
      for (int i = 0; i < count; ++i) p_old[i] = nm::bf16_to_f32(weight[i]);
    }
    load_moment(seg.m, seg.signed_map, seg.signed_map4, begin, count, c, m);
    load_moment(seg.v, seg.unsigned_map, seg.unsigned_map4, begin, count, c, v);

#pragma omp simd
    for (int i = 0; i < count; ++i) {
      float pi = p_old[i], mi = m[i], vi = v[i];
      nm::adamw_update_element(s, g[i], pi, mi, vi);
      p[i] = pi;
      m[i] = mi;
      v[i] = vi;
    }
    float lane_u[8] = {}, lane_w[8] = {};
    int i8 = 0;
    for (; i8 + 8 <= count; i8 += 8) {
#pragma omp simd
      for (int l = 0; l < 8; ++l) {
        const float du = p[i8 + l] - p_old[i8 + l];
        lane_u[l] += du * du;
        lane_w[l] += p_old[i8 + l] * p_old[i8 + l];
      }
    }
    for (int l = 0; i8 + l < count; ++l) {
      const float du = p[i8 + l] - p_old[i8 + l];
      lane_u[l] += du * du;
      lane_w[l] += p_old[i8 + l] * p_old[i8 + l];
    }
    update_ss += double(sum_lanes(lane_u));
    weight_ss += double(sum_lanes(lane_w));

    store_moment(seg.m, seg.signed_map, seg.signed_map4, begin, count, c, m, portable);
    store_moment(seg.v, seg.unsigned_map, seg.unsigned_map4, begin, count, c, v, portable);
    if (has_master) {
      float* master = seg.master + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) master[i] = p[i];
    }
    int chunk_unchanged = 0;
    if (has_remainder) {
      uint16_t* remainder = seg.remainder + begin;
#pragma omp simd reduction(+ : chunk_unchanged)
      for (int i = 0; i < count; ++i) {
        const nm::MasterSplit split = nm::master_split(p[i]);
        chunk_unchanged += split.weight == weight[i] ? 1 : 0;
        weight[i] = split.weight;
        remainder[i] = split.remainder;
      }
    } else if (stochastic) {
      fill_random_bits_cpu(key, seg.global_offset + begin, count, bits);
#pragma omp simd reduction(+ : chunk_unchanged)
      for (int i = 0; i < count; ++i) {
        const uint16_t w = nm::f32_to_bf16_sr(p[i], bits[i]);
        chunk_unchanged += w == weight[i] ? 1 : 0;
        weight[i] = w;
      }
    } else {
#pragma omp simd reduction(+ : chunk_unchanged)
      for (int i = 0; i < count; ++i) {
        const uint16_t w = nm::f32_to_bf16_rne(p[i]);
        chunk_unchanged += w == weight[i] ? 1 : 0;
        weight[i] = w;
      }
    }
    unchanged += chunk_unchanged;
  }
  AdamWPartials out;
  out.elements = int64_t(seg.n);
  out.weights_unchanged = unchanged;
  out.update_sum_squares = update_ss;
  out.weight_sum_squares = weight_ss;
  return out;
}

GradPartials grad_partials_cpu(const void* grad, GradFormat format, size_t n) {
  const int64_t chunks = int64_t((n + kChunk - 1) / kChunk);
  double sum_squares = 0.0;
  int64_t nonfinite = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum_squares, nonfinite)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = size_t(c) * kChunk;
    const int count = int(std::min<size_t>(kChunk, n - begin));
    alignas(64) float g[kChunk];
    if (format == GradFormat::kF32) {
      const float* src = static_cast<const float*>(grad) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) g[i] = src[i];
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(grad) + begin;
#pragma omp simd
      for (int i = 0; i < count; ++i) g[i] = nm::bf16_to_f32(src[i]);
    }
    double chunk_ss = 0.0;
    int chunk_nonfinite = 0;
#pragma omp simd reduction(+ : chunk_ss, chunk_nonfinite)
    for (int i = 0; i < count; ++i) {
      const double x = double(g[i]);
      chunk_ss += x * x;
      chunk_nonfinite += (nm::f32_to_bits(g[i]) & 0x7F800000u) == 0x7F800000u ? 1 : 0;
    }
    sum_squares += chunk_ss;
    nonfinite += chunk_nonfinite;
  }
  return GradPartials{sum_squares, nonfinite};
}

void moment_to_f32_cpu(const MomentRef& moment, const QuantMapCpu* map, const float* map4, float* dst, size_t n) {
  const int64_t blocks = int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = size_t(b) * kChunk;
    load_moment(moment, map, map4, begin, int(std::min<size_t>(kChunk, n - begin)), b, dst + begin);
  }
}

}  // namespace farthing::kernels

// test_adamw_avx2_matches_portable.cpp — the hand-vectorized AVX2 step for 8-bit, fp32 and
// bf16 moments (kernels/cpu/optim_cpu_avx2.cpp, block_quant_cpu_avx2.h) gives the portable
// loops' bits: weights, masters, remainders, codes, absmaxes, fp32/bf16 moments and the
// diagnostics, over three consecutive steps (both lerp forms), for every gradient format,
// master mode and rounding, on awkward inputs: tails that are not a multiple of 8, 32 or 256,
// a segment starting mid-block (and mid Philox group), all-zero blocks, NaN and inf gradients,
// overflowing v, subnormal gradients and moments, negative zeros, both maps. Skipped on builds
// without AVX2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/cpu/optim_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/master_remainder.h"
#include "tests/support/test_support.h"

namespace nm = farthing::numerics;
using namespace farthing::kernels;

namespace {

const QuantMapCpu& signed_map() {
  static const QuantMapCpu map = make_quant_map_cpu(nm::MapSign::kSigned);
  return map;
}
const QuantMapCpu& unsigned_map() {
  static const QuantMapCpu map = make_quant_map_cpu(nm::MapSign::kUnsigned);
  return map;
}

// One segment's buffers; copyable so the two paths start from the same state.
struct State {
  std::vector<float> grad_f32, master;
  std::vector<uint16_t> grad_bf16, weight, remainder;
  std::vector<uint8_t> m_codes, v_codes;
  std::vector<float> m_absmax, v_absmax;
  std::vector<float> m_f32, v_f32;          // MomentFormat::kF32
  std::vector<uint16_t> m_bf16, v_bf16;     // MomentFormat::kBf16
};

State make_state(size_t n, uint64_t lead, uint64_t seed) {
  farthing::test::SplitMix64 rng(seed);
  State st;
  const size_t blocks = (n + lead + 255) / 256;
  st.grad_f32.resize(n);
  st.grad_bf16.resize(n);
  st.master.resize(n);
  st.weight.resize(n);
  st.remainder.resize(n);
  st.m_codes.resize(n);
  st.v_codes.resize(n);
  st.m_absmax.resize(blocks);
  st.v_absmax.resize(blocks);
  st.m_f32.resize(n);
  st.v_f32.resize(n);
  st.m_bf16.resize(n);
  st.v_bf16.resize(n);
  for (size_t b = 0; b < blocks; ++b) {
    // Some all-zero blocks (absmax 0), the rest of various scales.
    st.m_absmax[b] = b % 5 == 3 ? 0.0f : float(rng.uniform()) * 1e-3f;
    st.v_absmax[b] = b % 5 == 3 ? 0.0f : float(rng.uniform()) * 1e-6f;
    // Poisoned moments from an earlier step: an inf absmax (0 * inf dequantizes to NaN) and a
    // NaN absmax with a payload; both loops must store the canonical NaN (block_quant.h).
    if (b % 13 == 9) st.m_absmax[b] = INFINITY;
    if (b % 13 == 10) st.v_absmax[b] = nm::bits_to_f32(0x7FC0BEEFu);
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t b = (i + lead) / 256;
    float g = float(rng.normal()) * 1e-3f;
    const uint64_t r = rng.next() % 1000;
    if (b % 5 == 3) g = 0.0f;                                            // zero block stays zero
    else if (b % 7 == 4 && r < 3) g = std::numeric_limits<float>::quiet_NaN();  // NaN block
    else if (b % 7 == 5 && r < 3) g = (r & 1) ? INFINITY : -INFINITY;   // inf gradient
    else if (b % 11 == 6 && r < 5) g = 3e30f;                           // v overflows to inf
    else if (r < 20) g = 1e-40f;                                        // subnormal
    else if (r < 30) g = -0.0f;
    else if (r < 40) g = 0.0f;
    st.grad_f32[i] = g;
    st.grad_bf16[i] = nm::f32_to_bf16_rne(g);
    st.master[i] = r < 10 ? 0.0f : float(rng.normal()) * 0.02f;
    st.weight[i] = nm::f32_to_bf16_rne(st.master[i]);
    st.remainder[i] = uint16_t(nm::f32_to_bits(st.master[i]) & 0xFFFFu);
    st.weight[i] = nm::master_split(st.master[i]).weight;
    st.m_codes[i] = b % 5 == 3 ? 127 : uint8_t(rng.next());
    st.v_codes[i] = b % 5 == 3 ? 0 : uint8_t(rng.next());
    // fp32 / bf16 moments: zeros, negative zeros, subnormals, a few huge v, the rest random.
    float m = float(rng.normal()) * 1e-3f, v = float(rng.uniform()) * 1e-6f;
    const uint64_t q = rng.next() % 1000;
    if (b % 5 == 3) m = v = 0.0f;
    else if (q < 10) m = -0.0f;
    else if (q < 20) m = (q & 1) ? 3e-39f : -2e-40f, v = 1e-42f;
    else if (q < 23) v = 3e38f;
    st.m_f32[i] = m;
    st.v_f32[i] = v;
    st.m_bf16[i] = nm::f32_to_bf16_rne(m);
    st.v_bf16[i] = nm::f32_to_bf16_rne(v);
  }
  return st;
}

AdamWPartials step(State& st, size_t n, uint64_t offset, GradFormat gf, MomentFormat mf, MasterMode mode,
                   WeightRounding rounding, uint32_t t, CpuKernelPath path) {
  AdamWSegmentCpu seg;
  seg.n = n;
  seg.global_offset = offset;
  seg.grad = gf == GradFormat::kF32 ? static_cast<const void*>(st.grad_f32.data()) : st.grad_bf16.data();
  seg.grad_format = gf;
  seg.weight = st.weight.data();
  seg.master = mode == MasterMode::kF32 ? st.master.data() : nullptr;
  seg.remainder = mode == MasterMode::kRemainder16 ? st.remainder.data() : nullptr;
  seg.master_mode = mode;
  seg.weight_rounding = rounding;
  if (mf == MomentFormat::kBlock8) {
    seg.m = {MomentFormat::kBlock8, st.m_codes.data(), st.m_absmax.data()};
    seg.v = {MomentFormat::kBlock8, st.v_codes.data(), st.v_absmax.data()};
  } else if (mf == MomentFormat::kF32) {
    seg.m = {MomentFormat::kF32, st.m_f32.data(), nullptr};
    seg.v = {MomentFormat::kF32, st.v_f32.data(), nullptr};
  } else {
    seg.m = {MomentFormat::kBf16, st.m_bf16.data(), nullptr};
    seg.v = {MomentFormat::kBf16, st.v_bf16.data(), nullptr};
  }
  // beta1 0.9 (small lerp weight) on odd steps, 0.3 (the other lerp form) on even ones.
  seg.scalars = nm::make_adamw_scalars(1e-3, t % 2 ? 0.9 : 0.3, 0.999, 1e-8, 0.01, t, t == 2 ? 0.5 : 1.0);
  seg.seed = 0xC0FFEE;
  seg.step = t;
  seg.signed_map = &signed_map();
  seg.unsigned_map = &unsigned_map();
  return adamw_step_cpu(seg, path);
}

// Same bits, or both NaN: a NaN's sign and payload in a sum depend on which operand of an
// addition the compiler puts first, which it may swap (addition commutes); the sums are
// diagnostics, and the stored state is compared bit for bit.
bool same_sum(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0 || (std::isnan(a) && std::isnan(b));
}

template <typename T>
int count_bit_differences(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 && differ++ < 3) ADD_FAILURE() << what << " differs at " << i;
  }
  return differ;
}

void expect_paths_agree(size_t n, uint64_t offset, GradFormat gf, MomentFormat mf, MasterMode mode,
                        WeightRounding rounding) {
  SCOPED_TRACE(testing::Message() << "n " << n << " offset " << offset << " grad " << int(gf) << " moments "
                                  << int(mf) << " mode " << int(mode) << " rounding " << int(rounding));
  State vec = make_state(n, offset % 256, n * 31 + offset);
  State ref = vec;
  for (uint32_t t = 1; t <= 3; ++t) {
    const AdamWPartials pv = step(vec, n, offset, gf, mf, mode, rounding, t, CpuKernelPath::kAuto);
    const AdamWPartials pr = step(ref, n, offset, gf, mf, mode, rounding, t, CpuKernelPath::kPortable);
    EXPECT_EQ(pv.elements, pr.elements);
    EXPECT_EQ(pv.weights_unchanged, pr.weights_unchanged) << "step " << t;
    EXPECT_TRUE(same_sum(pv.update_sum_squares, pr.update_sum_squares))
        << "step " << t << ": " << pv.update_sum_squares << " vs " << pr.update_sum_squares;
    EXPECT_TRUE(same_sum(pv.weight_sum_squares, pr.weight_sum_squares))
        << "step " << t << ": " << pv.weight_sum_squares << " vs " << pr.weight_sum_squares;
    int differ = count_bit_differences(vec.weight, ref.weight, "weight");
    differ += count_bit_differences(vec.m_codes, ref.m_codes, "m code");
    differ += count_bit_differences(vec.v_codes, ref.v_codes, "v code");
    differ += count_bit_differences(vec.m_absmax, ref.m_absmax, "m absmax");
    differ += count_bit_differences(vec.v_absmax, ref.v_absmax, "v absmax");
    differ += count_bit_differences(vec.m_f32, ref.m_f32, "m f32");
    differ += count_bit_differences(vec.v_f32, ref.v_f32, "v f32");
    differ += count_bit_differences(vec.m_bf16, ref.m_bf16, "m bf16");
    differ += count_bit_differences(vec.v_bf16, ref.v_bf16, "v bf16");
    if (mode == MasterMode::kF32) differ += count_bit_differences(vec.master, ref.master, "master");
    if (mode == MasterMode::kRemainder16) differ += count_bit_differences(vec.remainder, ref.remainder, "remainder");
    ASSERT_EQ(differ, 0) << "step " << t;
  }
}

}  // namespace

void expect_every_mode_agrees(MomentFormat mf, std::initializer_list<uint64_t> offsets) {
  const size_t sizes[] = {1, 7, 8, 9, 31, 33, 255, 256, 257, 4096, 256 * 7 + 13, 100003};
  for (size_t n : sizes) {
    for (uint64_t offset : offsets) {
      for (GradFormat gf : {GradFormat::kF32, GradFormat::kBf16}) {
        expect_paths_agree(n, offset, gf, mf, MasterMode::kF32, WeightRounding::kNearest);
        expect_paths_agree(n, offset, gf, mf, MasterMode::kF32, WeightRounding::kStochastic);
        expect_paths_agree(n, offset, gf, mf, MasterMode::kRemainder16, WeightRounding::kNearest);
        expect_paths_agree(n, offset, gf, mf, MasterMode::kNone, WeightRounding::kStochastic);
        expect_paths_agree(n, offset, gf, mf, MasterMode::kNone, WeightRounding::kNearest);
      }
    }
  }
}

TEST(AdamWAvx2MatchesPortable, EveryModeAndAwkwardShape) {
  if (!adamw_step_cpu_has_avx2()) GTEST_SKIP() << "this build has no AVX2 path";
  expect_every_mode_agrees(MomentFormat::kBlock8, {0, 256 * 1024, 1283});
}

// fp32 and bf16 moments have no block alignment: segments may start anywhere (mid-chunk, mid
// Philox group of four, mid group of eight).
TEST(AdamWAvx2MatchesPortable, F32MomentsEveryModeAndAwkwardShape) {
  if (!adamw_step_cpu_has_avx2()) GTEST_SKIP() << "this build has no AVX2 path";
  expect_every_mode_agrees(MomentFormat::kF32, {0, 256 * 1024, 1283, 1, 6, 250});
}

TEST(AdamWAvx2MatchesPortable, Bf16MomentsEveryModeAndAwkwardShape) {
  if (!adamw_step_cpu_has_avx2()) GTEST_SKIP() << "this build has no AVX2 path";
  expect_every_mode_agrees(MomentFormat::kBf16, {0, 256 * 1024, 1283, 1, 6, 250});
}

// block_quantize_one_cpu (AVX2 where built) against the portable loop: every count 1..256,
// both maps, blocks of random values, ties of +/-absmax, negative zeros, subnormals, zeros,
// NaN and inf blocks.
TEST(AdamWAvx2MatchesPortable, BlockQuantizeOne) {
  farthing::test::SplitMix64 rng(7);
  for (const QuantMapCpu* map : {&signed_map(), &unsigned_map()}) {
    for (int count = 1; count <= 256; ++count) {
      for (int kind = 0; kind < 6; ++kind) {
        std::vector<float> x(static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) {
          float value = float(rng.normal()) * (kind == 1 ? 1e-40f : 1e-3f);
          if (!map->is_signed) value = std::fabs(value);
          if (kind == 2) value = 0.0f;
          if (kind == 3 && i % 3 == 0) value = map->is_signed ? -0.0f : 0.0f;
          x[size_t(i)] = value;
        }
        if (kind == 3) x[size_t(count - 1)] = map->is_signed ? -2.5e-2f : 2.5e-2f;
        if (kind == 4) x[size_t(rng.next() % size_t(count))] = std::numeric_limits<float>::quiet_NaN();
        if (kind == 5) x[size_t(rng.next() % size_t(count))] = INFINITY;
        std::vector<uint8_t> got(static_cast<size_t>(count)), want(static_cast<size_t>(count));
        const float a = block_quantize_one_cpu(*map, x.data(), count, got.data());
        const float b = block_quantize_one_portable_cpu(*map, x.data(), count, want.data());
        ASSERT_EQ(0, std::memcmp(&a, &b, sizeof(float))) << "count " << count << " kind " << kind;
        ASSERT_EQ(got, want) << "count " << count << " kind " << kind << " signed " << map->is_signed;
      }
    }
  }
}

// The AVX2 table (QuantMapCpu::unit_codes, sign fix folded in) against the portable loop at
// every bucket's edges and on both sides of every switch threshold, for |y| <= 1: blocks of
// 255 such values plus one 1.0, so absmax is 1 and y is the value itself.
TEST(AdamWAvx2MatchesPortable, BlockQuantizeEveryBucketEdge) {
  for (const QuantMapCpu* map : {&signed_map(), &unsigned_map()}) {
    std::vector<float> values;
    for (uint32_t bucket = 0; bucket < 65536; ++bucket) {
      if ((bucket & 0x7FFFu) > 0x3F80u) continue;
      for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0xFFFEu, 0xFFFFu}) {
        values.push_back(nm::bits_to_f32((bucket << 16) | low));
      }
      const float t = map->threshold[bucket];
      if (t != INFINITY) {
        for (float d : {-2.0f, -1.0f, 0.0f, 1.0f, 2.0f}) {
          values.push_back(nm::bits_to_f32(uint32_t(int64_t(nm::f32_to_bits(t)) + int64_t(d))));
        }
      }
    }
    std::vector<float> block;
    std::vector<uint8_t> got(256), want(256);
    int blocks = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::fabs(values[i]) <= 1.0f) block.push_back(values[i]);
      if (block.size() == 255 || i + 1 == values.size()) {
        block.push_back(1.0f);
        const int count = int(block.size());
        const float a = block_quantize_one_cpu(*map, block.data(), count, got.data());
        const float b = block_quantize_one_portable_cpu(*map, block.data(), count, want.data());
        ASSERT_EQ(a, 1.0f);
        ASSERT_EQ(b, 1.0f);
        for (int k = 0; k < count; ++k) {
          ASSERT_EQ(got[size_t(k)], want[size_t(k)]) << "y " << block[size_t(k)] << " (bits 0x" << std::hex
                                                     << nm::f32_to_bits(block[size_t(k)]) << std::dec << ") signed "
                                                     << map->is_signed;
        }
        block.clear();
        ++blocks;
      }
    }
    EXPECT_GT(blocks, 500);  // ~770 per map
  }
}

// test_fp4_cpu.cpp — FP4 operands and the emulated FP4 GEMM (kernels/cpu/fp4_cpu.h), and NnOps' host
// emulation of them for a device (framework/backend/fp4_host_emulation.cpp).
//
// 1. Quantized operands, code for code and scale for scale, against fp4_block.h's one-block
//    functions called block by block here (NVFP4's tensor scale from an amax taken here): 1D blocks
//    with a tail block, both formats, round to nearest and stochastic (bits at the element's index);
//    a transposed or bf16 source equals quantizing the explicit transpose / the widened values.
// 2. 2D (16x16) scaling: every row of a tile carries the scale of the tile's amax, and W^T's codes
//    and scales are W's transposed (forward and backward see one quantized weight).
// 3. The Hadamard transform: each row's full chunks transformed (hadamard.h, tested against the
//    dense matrix in test_hadamard), the tail chunk left alone, before the scales are taken.
// 4. The GEMM against an fp64 sum of the operands dequantized here from the formats' definitions
//    (not the kernels' helper the GEMM itself uses) (fp32 accumulation: a priori bound of
//    k · 2^-23 · sum |a||b|), with accumulate; and the strict device's host emulation bit for bit.
// 5. Tseng et al.'s 3/4 pre-scale: a clipping element's stochastic rounding becomes unbiased.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/backend/cpu_nn_ops.h"
#include "framework/core/error.h"
#include "kernels/cpu/fp4_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp4_block.h"
#include "kernels/numerics/hadamard.h"

namespace farthing::kernels {
namespace {

namespace nm = farthing::numerics;

// An operand with its own storage.
struct Quantized {
  std::vector<uint8_t> codes, scales;
  float decode = 0.0f;
  std::vector<float> workspace;
  Fp4Operand op;
};

Quantized quantize(Fp4QuantizeArgs a) {
  Quantized q;
  q.codes.assign(size_t(a.rows * a.cols), 0xEE);
  q.scales.assign(size_t(a.rows * fp4_blocks_per_row(a.cols, a.block)), 0xEE);
  q.workspace.resize(size_t(a.rows * a.cols));
  a.codes = q.codes.data();
  a.scales = q.scales.data();
  a.decode_scale = &q.decode;
  a.workspace = q.workspace.data();
  fp4_quantize_cpu(a);
  q.op = Fp4Operand{q.codes.data(), q.scales.data(), &q.decode, a.rows, a.cols, a.block, a.scale};
  return q;
}

// Rows whose magnitudes span several binades, so blocks get different scales.
std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] = normal(rng) * std::ldexp(1.0f, int((r + c / 7) % 9) - 4);
  }
  return x;
}

float abs_max(const std::vector<float>& x) {
  float m = 0.0f;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

// The reference: fp4_block.h's block functions, block by block along each row.
struct Reference {
  std::vector<uint8_t> codes, scales;
  float decode = 1.0f;
};
Reference reference(const std::vector<float>& x, int64_t rows, int64_t cols, int block, Fp4Scale scale,
                    bool stochastic, nm::RandomKey key, uint64_t first) {
  Reference ref;
  ref.codes.resize(size_t(rows * cols));
  const int64_t bpr = fp4_blocks_per_row(cols, block);
  ref.scales.resize(size_t(rows * bpr));
  const float s_enc = nm::nvfp4_global_encode_scale(abs_max(x));
  if (scale == Fp4Scale::kE4M3) ref.decode = nm::nvfp4_global_decode_scale(s_enc);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < bpr; ++b) {
      const int64_t at = r * cols + b * block;
      const int n = int(std::min<int64_t>(block, cols - b * block));
      const float* xb = x.data() + at;
      uint8_t* cb = ref.codes.data() + at;
      const uint64_t index = first + uint64_t(at);
      uint8_t s = 0;
      if (scale == Fp4Scale::kE4M3) {
        s = stochastic ? nm::nvfp4_quantize_block_sr(xb, n, s_enc, cb, key, index) : nm::nvfp4_quantize_block(xb, n, s_enc, cb);
      } else {
        s = stochastic ? nm::mxfp4_quantize_block_sr(xb, n, cb, key, index) : nm::mxfp4_quantize_block(xb, n, cb);
      }
      ref.scales[size_t(r * bpr + b)] = s;
    }
  }
  return ref;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  }
  return t;
}

struct Format {
  int block;
  Fp4Scale scale;
};
constexpr Format kFormats[] = {{16, Fp4Scale::kE4M3}, {32, Fp4Scale::kE8M0}};

// Round-to-nearest 1D arguments for an fp32 (rows, cols) operand in format f.
Fp4QuantizeArgs args_for(const float* x, int64_t rows, int64_t cols, Format f) {
  Fp4QuantizeArgs a;
  a.x_f32 = x;
  a.rows = rows;
  a.cols = cols;
  a.block = f.block;
  a.scale = f.scale;
  return a;
}

TEST(Fp4Cpu, OneDimensionalBlocksMatchTheBlockFunctions) {
  const int64_t rows = 5, cols = 70;  // a tail block in every row
  const std::vector<float> x = random_matrix(rows, cols, 1);
  const nm::RandomKey key{77, 4, nm::RandomPurpose::kFp4Gradient};
  for (const Format f : kFormats) {
    for (const bool sr : {false, true}) {
      Fp4QuantizeArgs a = args_for(x.data(), rows, cols, f);
      a.stochastic = sr;
      a.key = key;
      a.first_index = uint64_t(3) << 40;
      const Quantized q = quantize(a);
      const Reference ref = reference(x, rows, cols, f.block, f.scale, sr, key, a.first_index);
      EXPECT_EQ(q.codes, ref.codes) << "block " << f.block << " sr " << sr;
      EXPECT_EQ(q.scales, ref.scales) << "block " << f.block << " sr " << sr;
      EXPECT_EQ(q.decode, ref.decode);
    }
  }
}

TEST(Fp4Cpu, TransposedAndBf16SourcesAreTheSameOperand) {
  const int64_t rows = 24, cols = 40;
  std::vector<float> x = random_matrix(rows, cols, 2);
  std::vector<uint16_t> x_bf16(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x_bf16[i] = nm::f32_to_bf16_rne(x[i]);
    x[i] = nm::bf16_to_f32(x_bf16[i]);
  }
  const std::vector<float> xt = transpose(x, rows, cols);  // stored (cols, rows)
  for (const Format f : kFormats) {
    Fp4QuantizeArgs a = args_for(x.data(), rows, cols, f);
    const Quantized plain = quantize(a);
    a.x_f32 = nullptr;
    a.x_bf16 = x_bf16.data();
    const Quantized from_bf16 = quantize(a);
    a.x_bf16 = nullptr;
    a.x_f32 = xt.data();
    a.transposed = true;
    const Quantized from_transpose = quantize(a);
    EXPECT_EQ(plain.codes, from_bf16.codes);
    EXPECT_EQ(plain.codes, from_transpose.codes);
    EXPECT_EQ(plain.scales, from_transpose.scales);
    EXPECT_EQ(plain.decode, from_transpose.decode);
  }
}

TEST(Fp4Cpu, TwoDimensionalTilesShareOneScaleAndTransposeExactly) {
  const int64_t rows = 40, cols = 36;  // tail tiles in both dimensions
  const std::vector<float> w = random_matrix(rows, cols, 3);
  Fp4QuantizeArgs a;
  a.x_f32 = w.data();
  a.rows = rows;
  a.cols = cols;
  a.block_2d = true;
  const Quantized q = quantize(a);
  const float s_enc = nm::nvfp4_global_encode_scale(abs_max(w));
  const int64_t bpr = fp4_blocks_per_row(cols, 16);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < bpr; ++b) {
      float amax = 0.0f;  // the tile's
      for (int64_t tr = r / 16 * 16; tr < std::min<int64_t>(rows, r / 16 * 16 + 16); ++tr) {
        for (int64_t c = b * 16; c < std::min<int64_t>(cols, b * 16 + 16); ++c) amax = std::max(amax, std::fabs(w[size_t(tr * cols + c)]));
      }
      ASSERT_EQ(q.scales[size_t(r * bpr + b)], nm::nvfp4_block_scale(amax, s_enc)) << "row " << r << " block " << b;
    }
  }
  // W^T (cols, rows) from the same storage: its codes are W's transposed, its scales per tile too.
  a.transposed = true;
  a.rows = cols;
  a.cols = rows;
  const Quantized qt = quantize(a);
  const int64_t bpr_t = fp4_blocks_per_row(rows, 16);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(q.codes[size_t(r * cols + c)], qt.codes[size_t(c * rows + r)]) << r << "," << c;
      ASSERT_EQ(q.scales[size_t(r * bpr + c / 16)], qt.scales[size_t(c * bpr_t + r / 16)]) << r << "," << c;
    }
  }
  // 1D blocks give other scales on this matrix (its rows' magnitudes differ within a tile).
  a.block_2d = false;
  a.transposed = false;
  a.rows = rows;
  a.cols = cols;
  EXPECT_NE(quantize(a).scales, q.scales);
}

TEST(Fp4Cpu, HadamardTransformsFullChunksBeforeTheScales) {
  const int64_t rows = 6, cols = 40;  // two chunks of 16, a tail of 8 left alone
  const std::vector<float> x = random_matrix(rows, cols, 4);
  std::vector<float> signs(16);
  for (int i = 0; i < 16; ++i) signs[size_t(i)] = nm::hadamard_sign({5, 6, nm::RandomPurpose::kHadamardSigns}, uint64_t(i));
  std::vector<float> rotated = x;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 + 16 <= cols; c0 += 16) nm::random_hadamard_chunk(rotated.data() + r * cols + c0, signs.data(), 16);
  }
  Fp4QuantizeArgs a;
  a.x_f32 = x.data();
  a.rows = rows;
  a.cols = cols;
  a.rht_size = 16;
  a.rht_signs = signs.data();
  const Quantized q = quantize(a);
  const Reference ref = reference(rotated, rows, cols, 16, Fp4Scale::kE4M3, false, {}, 0);
  EXPECT_EQ(q.codes, ref.codes);
  EXPECT_EQ(q.scales, ref.scales);
  EXPECT_EQ(q.decode, ref.decode);
}

// Element (r, c) of an operand from the formats' definitions, not the kernels' helpers: the E2M1
// code (bit 3 the sign; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) times its block's scale (E8M0:
// 2^(code - 127); E4M3: bias 7, three mantissa bits, subnormals m 2^-9) times the decode scale.
double element_by_definition(const Fp4Operand& x, int64_t r, int64_t c) {
  static constexpr double kE2M1[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const uint8_t code = x.codes[r * x.cols + c];
  const int s = x.scales[r * fp4_blocks_per_row(x.cols, x.block) + c / x.block];
  const int e = s >> 3, m = s & 7;
  const double scale = x.scale == Fp4Scale::kE8M0 ? std::ldexp(1.0, s - 127)
                       : e == 0                   ? std::ldexp(double(m), -9)
                                                  : std::ldexp(1.0 + m / 8.0, e - 7);
  return ((code & 8) != 0 ? -1.0 : 1.0) * kE2M1[code & 7] * scale * double(*x.decode_scale);
}

// fp64 sum of the operands' products, C (m, n) = A (m, k) · B (n, k)^T, each element dequantized
// by element_by_definition.
std::vector<double> reference_gemm(const Fp4Operand& a, const Fp4Operand& b, std::vector<double>& bound) {
  std::vector<double> da(size_t(a.rows * a.cols)), db(size_t(b.rows * b.cols));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) da[size_t(r * a.cols + c)] = element_by_definition(a, r, c);
  }
  for (int64_t r = 0; r < b.rows; ++r) {
    for (int64_t c = 0; c < b.cols; ++c) db[size_t(r * b.cols + c)] = element_by_definition(b, r, c);
  }
  std::vector<double> c(size_t(a.rows * b.rows));
  bound.assign(c.size(), 0.0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.rows; ++j) {
      for (int64_t l = 0; l < a.cols; ++l) {
        const double p = da[size_t(i * a.cols + l)] * db[size_t(j * b.cols + l)];
        c[size_t(i * b.rows + j)] += p;
        bound[size_t(i * b.rows + j)] += std::fabs(p);
      }
    }
  }
  return c;
}

TEST(Fp4Cpu, GemmIsTheSumOfDequantizedProducts) {
  const int64_t m = 19, n = 23, k = 80;
  const std::vector<float> x = random_matrix(m, k, 5), w = random_matrix(n, k, 6);
  for (const Format f : kFormats) {
    const Quantized qa = quantize(args_for(x.data(), m, k, f));
    const Quantized qb = quantize(args_for(w.data(), n, k, f));
    std::vector<double> bound;
    const std::vector<double> ref = reference_gemm(qa.op, qb.op, bound);
    std::vector<uint8_t> workspace(size_t(fp4_matmul_workspace_bytes(m, n, k)));
    std::vector<float> c(size_t(m * n), 1.0f);
    fp4_matmul_cpu(m, n, k, qa.op, qb.op, c.data(), true, workspace.data());
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], 1.0 + ref[i], 1e-6 + 4.0 * k * std::ldexp(1.0, -23) * bound[i]) << "block " << f.block << " at " << i;
    }
  }
}

TEST(Fp4Cpu, StrictDeviceHostEmulationIsBitwiseTheCpu) {
  const int64_t m = 16, n = 12, k = 48;
  const std::vector<float> x = random_matrix(m, k, 8), w = random_matrix(n, k, 9);
  std::vector<float> signs(16);
  for (int i = 0; i < 16; ++i) signs[size_t(i)] = nm::hadamard_sign({1, 2, nm::RandomPurpose::kHadamardSigns}, uint64_t(i));
  Fp4QuantizeArgs a;
  a.rows = m;
  a.cols = k;
  a.rht_size = 16;
  a.rht_signs = signs.data();
  a.stochastic = true;
  a.key = {3, 4, nm::RandomPurpose::kFp4Gradient};
  a.x_f32 = x.data();
  const Quantized qa = quantize(a);
  Fp4QuantizeArgs b = a;
  b.rows = n;
  b.x_f32 = w.data();
  const Quantized qb = quantize(b);
  std::vector<uint8_t> workspace(size_t(fp4_matmul_workspace_bytes(m, n, k)));
  std::vector<float> c_cpu(size_t(m * n));
  fp4_matmul_cpu(m, n, k, qa.op, qb.op, c_cpu.data(), false, workspace.data());

  NnOps& ops = backend_for(Device::strict()).nn();
  const auto device_copy = [&](const std::vector<float>& host) {
    Buffer buf(Device::strict(), host.size() * 4, MemoryCategory::kActivations);
    ops.copy(static_cast<float*>(buf.data()), host.data(), int64_t(host.size()));
    return buf;
  };
  Buffer dx = device_copy(x), dw = device_copy(w), dsigns = device_copy(signs);
  Buffer slots(Device::strict(), size_t(4 * 4096), MemoryCategory::kActivations);
  auto* base = static_cast<uint8_t*>(slots.data());
  Buffer dworkspace(Device::strict(), size_t(m * k * 4), MemoryCategory::kActivations);
  Buffer dc(Device::strict(), size_t(m * n * 4), MemoryCategory::kActivations);
  Fp4QuantizeArgs da = a, db = b;
  da.x_f32 = static_cast<float*>(dx.data());
  db.x_f32 = static_cast<float*>(dw.data());
  da.rht_signs = db.rht_signs = static_cast<float*>(dsigns.data());
  da.codes = base;
  da.scales = base + 1024;
  da.decode_scale = reinterpret_cast<float*>(base + 2048);
  db.codes = base + 4096;
  db.scales = base + 4096 + 1024;
  db.decode_scale = reinterpret_cast<float*>(base + 4096 + 2048);
  da.workspace = db.workspace = static_cast<float*>(dworkspace.data());
  ops.fp4_quantize(da);
  ops.fp4_quantize(db);
  const Fp4Operand oa{da.codes, da.scales, da.decode_scale, m, k, 16, Fp4Scale::kE4M3};
  const Fp4Operand ob{db.codes, db.scales, db.decode_scale, n, k, 16, Fp4Scale::kE4M3};
  ops.matmul_fp4(m, n, k, oa, ob, static_cast<float*>(dc.data()), false, nullptr);
  std::vector<float> c_strict(size_t(m * n)), codes(size_t(m * k / 4));
  ops.copy(c_strict.data(), static_cast<float*>(dc.data()), m * n);
  ops.copy(codes.data(), reinterpret_cast<const float*>(da.codes), m * k / 4);
  EXPECT_EQ(std::memcmp(codes.data(), qa.codes.data(), size_t(m * k)), 0);
  EXPECT_EQ(std::memcmp(c_strict.data(), c_cpu.data(), c_cpu.size() * 4), 0);
}

// Tseng et al.'s 3/4 pre-scale: in an MXFP4 block whose amax is 7.5 (scale 2^0), 7.5 clips to 6
// under plain SR (always: the mean of many draws is 6, a bias of -1.5), while with the pre-scale
// it is encoded as 5.625 between 4 and 6, and the decode scale 4/3 makes the mean of the
// dequantized draws 7.5 (unbiased; over 4000 draws the standard error is ~0.017). Each code is
// fp4_encode_element_sr of x times 3/4 of the block's multiplier, bit for bit.
TEST(Fp4Cpu, ThreeQuarterPrescaleMakesStochasticRoundingUnbiased) {
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * float(i % 7) - 1.1f;
  x[0] = 7.5f;
  x[5] = -5.3f;
  const nm::RandomKey key{11, 3, nm::RandomPurpose::kFp4Gradient};
  constexpr int kDraws = 4000;
  for (bool prescale : {false, true}) {
    double mean0 = 0.0, mean5 = 0.0;
    std::vector<float> deq(x.size());
    for (int t = 0; t < kDraws; ++t) {
      Fp4QuantizeArgs a = args_for(x.data(), 1, 32, {32, Fp4Scale::kE8M0});
      a.stochastic = true;
      a.sr_prescale = prescale;
      a.key = key;
      a.first_index = uint64_t(t) * 64;
      const Quantized q = quantize(a);
      ASSERT_EQ(q.scales[0], 127 + 0) << "the scale comes from the unscaled amax: 2^(floor(log2 7.5) - 2)";
      ASSERT_EQ(q.decode, prescale ? 4.0f / 3.0f : 1.0f);
      if (t < 3) {
        const float m = nm::mxfp4_encode_multiplier(q.scales[0]) * (prescale ? 0.75f : 1.0f);
        for (size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(q.codes[i], nm::fp4_encode_element_sr(x[i], m, nm::random_bits_for_element(key, a.first_index + i)))
              << "element " << i;
        }
      }
      fp4_dequantize_f32_cpu(q.op, deq.data());
      mean0 += deq[0];
      mean5 += deq[5];
    }
    mean0 /= kDraws;
    mean5 /= kDraws;
    if (prescale) {
      EXPECT_NEAR(mean0, 7.5, 0.08) << "a clipping element's SR is unbiased with the pre-scale";
      EXPECT_NEAR(mean5, -5.3, 0.08);
    } else {
      EXPECT_EQ(mean0, 6.0) << "without the pre-scale 7.5 always clips to 6";
      EXPECT_NEAR(mean5, -5.3, 0.08);
    }
  }
}

TEST(Fp4Cpu, BadArgumentsAreRefused) {
  CpuNnOps ops;
  std::vector<float> x(64);
  std::vector<uint8_t> bytes(64);
  float decode = 0.0f;
  Fp4QuantizeArgs a;
  a.x_f32 = x.data();
  a.rows = 4;
  a.cols = 16;
  a.block = 24;
  a.codes = bytes.data();
  a.scales = bytes.data();
  a.decode_scale = &decode;
  a.workspace = x.data();
  EXPECT_THROW(ops.fp4_quantize(a), Error);
  a.block = 16;
  a.rht_size = 8;
  EXPECT_THROW(ops.fp4_quantize(a), Error);
  a.rht_size = 0;
  a.sr_prescale = true;  // E4M3 scales
  EXPECT_THROW(ops.fp4_quantize(a), Error);
  const Fp4Operand op{bytes.data(), bytes.data(), &decode, 4, 16, 16, Fp4Scale::kE4M3};
  EXPECT_THROW(ops.matmul_fp4(4, 4, 32, op, op, x.data(), false, nullptr), Error);
}

}  // namespace
}  // namespace farthing::kernels

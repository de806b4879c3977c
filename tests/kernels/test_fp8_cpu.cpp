// test_fp8_cpu.cpp — FP8 quantization and the emulated FP8 GEMM on the host
// (kernels/cpu/fp8_cpu.h), and their argument checks through CpuNnOps
// (framework/backend/fp8_op_checks.h).
//
// fp8_quantize_cpu is checked bit for bit against a plain loop written here, which walks each
// tile of the tiling's definition and takes its amax by brute force as the max of ordered |x|
// bits (fp8_scaling.h): every tiling, fp32 and bf16 inputs, ragged tails, all-zero tiles, a NaN
// tile (scale 1, the NaN code only where the NaN was, other tiles untouched), delayed scaling and
// the whole-matrix amax; the result must not depend on the OpenMP thread count. fp8_matmul_cpu is
// checked against an fp64 GEMM of the dequantized operands for every transpose combination and
// odd shapes, with power-of-two scales (the bf16 path) and with other scales (the fp32 path).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "framework/backend/cpu_nn_ops.h"
#include "framework/core/error.h"
#include "kernels/cpu/fp8_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp8_scaling.h"
#include "kernels/numerics/fp8_workspace.h"
#include "tests/support/test_support.h"

namespace farthing::kernels {
namespace {

namespace nm = farthing::numerics;

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};
constexpr Fp8Tiling kTilings[] = {Fp8Tiling::kTensor, Fp8Tiling::kRow1x128, Fp8Tiling::kCol128x1,
                                  Fp8Tiling::kBlock128};

const char* name(Fp8Tiling t) {
  return t == Fp8Tiling::kTensor ? "kTensor" : t == Fp8Tiling::kRow1x128 ? "kRow1x128"
                                           : t == Fp8Tiling::kCol128x1  ? "kCol128x1"
                                                                        : "kBlock128";
}
const char* name(Fp8Format f) { return f == Fp8Format::kE4M3 ? "E4M3" : "E5M2"; }

bool is_nan_code(uint8_t c, Fp8Format f) {
  const uint8_t a = c & 0x7F;
  return f == Fp8Format::kE4M3 ? a == 0x7F : a > 0x7C;
}

// Values spread over many binades, so different tiles get different scales.
std::vector<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<float> x(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int e = int((r * 7 + c * 3) % 23) - 11;
      x[size_t(r * cols + c)] = float(rng.normal()) * std::ldexp(1.0f, e);
    }
  }
  return x;
}

// The quantizer's output.
struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> scale_inv;
  float amax = 0.0f;  // folded into (fp8_operand.h): +0 is the max's start
};

// The tiles of a tiling, from its definition: tile (tr, tc) spans rows [r0, r1) and columns
// [c0, c1); edge tiles are cut short. Scales are row-major over (tile_rows, tile_cols).
struct Tile { int64_t r0, r1, c0, c1; };
std::vector<Tile> tiles_of(Fp8Tiling t, int64_t rows, int64_t cols) {
  const int64_t re = t == Fp8Tiling::kTensor ? rows : t == Fp8Tiling::kRow1x128 ? 1 : 128;
  const int64_t ce = t == Fp8Tiling::kTensor ? cols : t == Fp8Tiling::kCol128x1 ? 1 : 128;
  std::vector<Tile> out;
  for (int64_t r0 = 0; r0 < rows; r0 += re) {
    for (int64_t c0 = 0; c0 < cols; c0 += ce) out.push_back({r0, std::min(rows, r0 + re), c0, std::min(cols, c0 + ce)});
  }
  return out;
}

// The plain scalar loop: per tile, amax by brute force over its elements as the max of the
// ordered |x| bits, the scale from that amax (or the given one), then the cast.
Quantized reference_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, Fp8Tiling tiling,
                             Fp8Format format, int margin, bool pow2, const float* given_scale) {
  Quantized q;
  q.codes.assign(size_t(rows * cols), 0);
  const std::vector<Tile> tiles = tiles_of(tiling, rows, cols);
  uint32_t total = 0;
  for (const Tile& t : tiles) {
    uint32_t amax = 0;
    for (int64_t r = t.r0; r < t.r1; ++r) {
      for (int64_t c = t.c0; c < t.c1; ++c) {
        const uint32_t b = nm::f32_to_bits(x[size_t(r * cols + c)]) & 0x7FFFFFFFu;
        amax = b > amax ? b : amax;
      }
    }
    total = amax > total ? amax : total;
    const float s = given_scale != nullptr ? *given_scale
                                           : nm::fp8_scale_from_amax(nm::bits_to_f32(amax), format, margin, pow2);
    q.scale_inv.push_back(1.0f / s);
    for (int64_t r = t.r0; r < t.r1; ++r) {
      for (int64_t c = t.c0; c < t.c1; ++c) q.codes[size_t(r * cols + c)] = nm::fp8_quantize(x[size_t(r * cols + c)], s, format);
    }
  }
  q.amax = nm::bits_to_f32(total);
  return q;
}

// fp8_quantize_cpu on fp32 input, or on its bf16 rounding when bf16 is given.
Quantized run_quantize(const std::vector<float>& x, const std::vector<uint16_t>* bf16, int64_t rows, int64_t cols,
                       Fp8Tiling tiling, Fp8Format format, int margin, bool pow2, const float* given_scale) {
  Quantized q;
  q.codes.assign(size_t(rows * cols), 0xAB);
  q.scale_inv.assign(size_t(nm::fp8_scale_count(tiling, rows, cols)), -7.0f);
  Fp8QuantizeArgs a;
  if (bf16 != nullptr) a.x_bf16 = bf16->data(); else a.x_f32 = x.data();
  a.rows = rows;
  a.cols = cols;
  a.tiling = tiling;
  a.format = format;
  a.margin = margin;
  a.power_of_two = pow2;
  a.given_scale = given_scale;
  a.codes = q.codes.data();
  a.scale_inv = q.scale_inv.data();
  a.amax = &q.amax;
  fp8_quantize_cpu(a);
  return q;
}

uint32_t bits(float v) { return nm::f32_to_bits(v); }

void expect_same(const Quantized& got, const Quantized& want, const std::string& what) {
  ASSERT_EQ(got.scale_inv.size(), want.scale_inv.size()) << what;
  for (size_t t = 0; t < want.scale_inv.size(); ++t) {
    ASSERT_EQ(bits(got.scale_inv[t]), bits(want.scale_inv[t]))
        << what << " tile " << t << ": s_inv " << got.scale_inv[t] << " vs " << want.scale_inv[t];
  }
  ASSERT_EQ(got.codes.size(), want.codes.size()) << what;
  for (size_t i = 0; i < want.codes.size(); ++i) {
    ASSERT_EQ(int(got.codes[i]), int(want.codes[i])) << what << " element " << i;
  }
  ASSERT_EQ(bits(got.amax), bits(want.amax)) << what << ": amax " << got.amax << " vs " << want.amax;
}

std::vector<uint16_t> to_bf16(std::vector<float>& x) {  // rounds x in place to its bf16 value
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    h[i] = nm::f32_to_bf16_rne(x[i]);
    x[i] = nm::bf16_to_f32(h[i]);
  }
  return h;
}

// ---------------------------------------------------------------------------------------------
// Quantization.

TEST(Fp8QuantizeCpu, MatchesScalarLoopEveryTilingFormatAndInput) {
  const int64_t shapes[][2] = {{130, 200}, {1, 1}, {257, 129}, {128, 256}, {3, 300}};
  for (const auto& sh : shapes) {
    const int64_t rows = sh[0], cols = sh[1];
    for (bool use_bf16 : {false, true}) {
      std::vector<float> x = random_matrix(rows, cols, uint64_t(rows * 1000 + cols));
      std::vector<uint16_t> h;
      if (use_bf16) h = to_bf16(x);
      for (Fp8Tiling t : kTilings) {
        for (Fp8Format f : kFormats) {
          for (int margin : {0, 2}) {
            for (bool pow2 : {true, false}) {
              const std::string what = std::string(name(t)) + " " + name(f) + " " + std::to_string(rows) + "x" +
                                       std::to_string(cols) + (use_bf16 ? " bf16" : " f32") + " margin " +
                                       std::to_string(margin) + (pow2 ? " pow2" : " any-scale");
              const Quantized want = reference_quantize(x, rows, cols, t, f, margin, pow2, nullptr);
              const Quantized got = run_quantize(x, use_bf16 ? &h : nullptr, rows, cols, t, f, margin, pow2, nullptr);
              expect_same(got, want, what);
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(Fp8QuantizeCpu, AllZeroTilesGetScaleOneAndZeroCodes) {
  const int64_t rows = 130, cols = 200;
  std::vector<float> x = random_matrix(rows, cols, 11);
  // Zero the top-left 128 x 128 block: block (0, 0), rows 0..127's first 1x128 tile, columns
  // 0..127's first 128x1 tile are all-zero tiles.
  for (int64_t r = 0; r < 128; ++r) {
    for (int64_t c = 0; c < 128; ++c) x[size_t(r * cols + c)] = 0.0f;
  }
  for (Fp8Tiling t : kTilings) {
    for (Fp8Format f : kFormats) {
      const Quantized got = run_quantize(x, nullptr, rows, cols, t, f, 0, true, nullptr);
      expect_same(got, reference_quantize(x, rows, cols, t, f, 0, true, nullptr), name(t));
      int zero_tiles = 0;
      for (const Tile& tile : tiles_of(t, rows, cols)) {
        if (tile.r1 > 128 || tile.c1 > 128) continue;  // only tiles inside the zeroed block
        ++zero_tiles;
        const int64_t idx = nm::fp8_scale_index(t, tile.r0, tile.c0, cols);
        EXPECT_EQ(got.scale_inv[size_t(idx)], 1.0f) << name(t) << " tile " << idx;
        for (int64_t r = tile.r0; r < tile.r1; ++r) {
          for (int64_t c = tile.c0; c < tile.c1; ++c) ASSERT_EQ(got.codes[size_t(r * cols + c)], 0) << name(t);
        }
      }
      if (t != Fp8Tiling::kTensor) {
        EXPECT_GT(zero_tiles, 0) << name(t);
      }
    }
  }
  // A matrix of zeros under per-tensor tiling: scale 1, codes 0, amax 0.
  const std::vector<float> z(size_t(rows * cols), 0.0f);
  for (Fp8Format f : kFormats) {
    const Quantized got = run_quantize(z, nullptr, rows, cols, Fp8Tiling::kTensor, f, 0, true, nullptr);
    EXPECT_EQ(got.scale_inv[0], 1.0f);
    EXPECT_EQ(bits(got.amax), 0u);
    for (uint8_t c : got.codes) ASSERT_EQ(c, 0);
  }
}

TEST(Fp8QuantizeCpu, NanTileHasNanAmaxScaleOneOthersUnaffected) {
  const int64_t rows = 130, cols = 200, nr = 5, nc = 140;
  const std::vector<float> clean = random_matrix(rows, cols, 23);
  std::vector<float> x = clean;
  x[size_t(nr * cols + nc)] = std::numeric_limits<float>::quiet_NaN();
  for (bool use_bf16 : {false, true}) {
    std::vector<float> xi = x, ci = clean;
    std::vector<uint16_t> h, hc;
    if (use_bf16) { h = to_bf16(xi); hc = to_bf16(ci); }
    ASSERT_TRUE(std::isnan(xi[size_t(nr * cols + nc)]));
    for (Fp8Tiling t : kTilings) {
      for (Fp8Format f : kFormats) {
        for (bool pow2 : {true, false}) {
          const std::string what = std::string(name(t)) + " " + name(f) + (use_bf16 ? " bf16" : " f32");
          const Quantized got = run_quantize(xi, use_bf16 ? &h : nullptr, rows, cols, t, f, 1, pow2, nullptr);
          expect_same(got, reference_quantize(xi, rows, cols, t, f, 1, pow2, nullptr), what);
          const Quantized base = run_quantize(ci, use_bf16 ? &hc : nullptr, rows, cols, t, f, 1, pow2, nullptr);
          EXPECT_TRUE(std::isnan(got.amax)) << what << ": the whole-matrix amax is NaN";
          const int64_t nan_tile = nm::fp8_scale_index(t, nr, nc, cols);
          EXPECT_EQ(got.scale_inv[size_t(nan_tile)], 1.0f) << what;
          for (size_t i = 0; i < got.scale_inv.size(); ++i) {
            if (int64_t(i) != nan_tile) {
              ASSERT_EQ(bits(got.scale_inv[i]), bits(base.scale_inv[i])) << what << " tile " << i;
            }
          }
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              const uint8_t code = got.codes[size_t(r * cols + c)];
              const bool at_nan = r == nr && c == nc;
              ASSERT_EQ(is_nan_code(code, f), at_nan) << what << " (" << r << ", " << c << ")";
              if (nm::fp8_scale_index(t, r, c, cols) != nan_tile) {
                ASSERT_EQ(code, base.codes[size_t(r * cols + c)]) << what << " (" << r << ", " << c << ")";
              } else if (!at_nan) {  // same tile as the NaN: quantized with scale 1
                ASSERT_EQ(code, nm::fp8_quantize(xi[size_t(r * cols + c)], 1.0f, f)) << what;
              }
            }
          }
        }
      }
    }
  }
}

TEST(Fp8QuantizeCpu, InfiniteTileHasScaleOneAndSaturates) {
  const int64_t rows = 130, cols = 200, ir = 129, ic = 3;
  std::vector<float> x = random_matrix(rows, cols, 29);
  x[size_t(ir * cols + ic)] = -std::numeric_limits<float>::infinity();
  for (Fp8Tiling t : kTilings) {
    for (Fp8Format f : kFormats) {
      const Quantized got = run_quantize(x, nullptr, rows, cols, t, f, 0, true, nullptr);
      expect_same(got, reference_quantize(x, rows, cols, t, f, 0, true, nullptr), name(t));
      EXPECT_TRUE(std::isinf(got.amax) && got.amax > 0) << name(t);
      EXPECT_EQ(got.scale_inv[size_t(nm::fp8_scale_index(t, ir, ic, cols))], 1.0f) << name(t);
      EXPECT_EQ(nm::fp8_decode(got.codes[size_t(ir * cols + ic)], f), -nm::fp8_max_finite(f)) << name(t);
    }
  }
}

TEST(Fp8QuantizeCpu, DelayedScalingUsesTheGivenScaleAndReportsTheAmax) {
  const int64_t rows = 130, cols = 200;
  const std::vector<float> x = random_matrix(rows, cols, 31);
  uint32_t amax_bits = 0;
  for (float v : x) amax_bits = std::max(amax_bits, bits(v) & 0x7FFFFFFFu);
  // A stale power of two, a non-power-of-two, and one large enough to saturate the big values.
  for (float given : {0x1p-3f, 3.3f, 0x1p20f}) {
    for (Fp8Format f : kFormats) {
      const Quantized got = run_quantize(x, nullptr, rows, cols, Fp8Tiling::kTensor, f, 0, true, &given);
      expect_same(got, reference_quantize(x, rows, cols, Fp8Tiling::kTensor, f, 0, true, &given), "delayed");
      ASSERT_EQ(got.scale_inv.size(), 1u);
      EXPECT_EQ(bits(got.scale_inv[0]), bits(1.0f / given));
      EXPECT_EQ(bits(got.amax), amax_bits) << "the amax is the matrix's own, whatever the given scale";
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got.codes[i], nm::fp8_quantize(x[i], given, f));
    }
  }
}

TEST(Fp8QuantizeCpu, WholeMatrixAmaxIsTheMaxOverTiles) {
  const int64_t rows = 257, cols = 129;
  std::vector<float> x = random_matrix(rows, cols, 41);
  x[size_t(200 * cols + 128)] = -1e7f;  // the largest magnitude, negative, in an edge tile
  for (Fp8Tiling t : kTilings) {
    const Quantized got = run_quantize(x, nullptr, rows, cols, t, Fp8Format::kE4M3, 0, true, nullptr);
    EXPECT_EQ(got.amax, 1e7f) << name(t);
  }
}

// Delayed scaling gathers a step's amaxes on the device: each cast folds its amax into the value
// already there (NaN-dominant max), so one read at the step's end sees them all.
TEST(Fp8QuantizeCpu, AmaxFoldsIntoTheValueThere) {
  const int64_t rows = 130, cols = 129;
  const std::vector<float> x = random_matrix(rows, cols, 43);
  const Quantized alone = run_quantize(x, nullptr, rows, cols, Fp8Tiling::kRow1x128, Fp8Format::kE4M3, 0, true, nullptr);
  ASSERT_GT(alone.amax, 0.0f);
  for (Fp8Tiling t : kTilings) {
    Fp8QuantizeArgs a;
    std::vector<uint8_t> codes(size_t(rows * cols));
    std::vector<float> s_inv(size_t(nm::fp8_scale_count(t, rows, cols)));
    a.x_f32 = x.data();
    a.rows = rows;
    a.cols = cols;
    a.tiling = t;
    a.format = Fp8Format::kE4M3;
    a.codes = codes.data();
    a.scale_inv = s_inv.data();
    float amax = 2.0f * alone.amax;  // larger than this matrix's: kept
    a.amax = &amax;
    fp8_quantize_cpu(a);
    EXPECT_EQ(amax, 2.0f * alone.amax) << name(t);
    amax = 0.5f * alone.amax;  // smaller: replaced by this matrix's
    fp8_quantize_cpu(a);
    EXPECT_EQ(amax, alone.amax) << name(t);
    amax = std::numeric_limits<float>::quiet_NaN();  // a NaN seen earlier in the step stays
    fp8_quantize_cpu(a);
    EXPECT_TRUE(std::isnan(amax)) << name(t);
  }
}

TEST(Fp8QuantizeCpu, SameBitsAtOneAndThreeThreads) {
  const int64_t rows = 257, cols = 300;
  std::vector<float> x = random_matrix(rows, cols, 53);
  x[size_t(77 * cols + 260)] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xb = x;
  const std::vector<uint16_t> h = to_bf16(xb);
  const int before = omp_get_max_threads();
  for (Fp8Tiling t : kTilings) {
    for (Fp8Format f : kFormats) {
      for (bool use_bf16 : {false, true}) {
        for (bool with_nan : {false, true}) {
          std::vector<float> xi = use_bf16 ? xb : x;
          std::vector<uint16_t> hi = h;
          if (!with_nan) {
            xi[size_t(77 * cols + 260)] = 1.0f;
            hi[size_t(77 * cols + 260)] = nm::f32_to_bf16_rne(1.0f);
          }
          omp_set_num_threads(1);
          const Quantized one = run_quantize(xi, use_bf16 ? &hi : nullptr, rows, cols, t, f, 0, false, nullptr);
          omp_set_num_threads(3);
          const Quantized three = run_quantize(xi, use_bf16 ? &hi : nullptr, rows, cols, t, f, 0, false, nullptr);
          omp_set_num_threads(before);
          expect_same(three, one, std::string("threads ") + name(t) + " " + name(f));
          // And the dequantized operand.
          for (bool to_bf16_out : {false, true}) {
            if (to_bf16_out) {
              std::vector<uint16_t> d1(xi.size()), d3(xi.size());
              Fp8Operand op{one.codes.data(), one.scale_inv.data(), rows, cols, t, f, false};
              omp_set_num_threads(1);
              fp8_dequantize_bf16_cpu(op, d1.data());
              omp_set_num_threads(3);
              fp8_dequantize_bf16_cpu(op, d3.data());
              omp_set_num_threads(before);
              ASSERT_EQ(std::memcmp(d1.data(), d3.data(), d1.size() * 2), 0);
            } else {
              std::vector<float> d1(xi.size()), d3(xi.size());
              Fp8Operand op{one.codes.data(), one.scale_inv.data(), rows, cols, t, f, false};
              omp_set_num_threads(1);
              fp8_dequantize_f32_cpu(op, d1.data());
              omp_set_num_threads(3);
              fp8_dequantize_f32_cpu(op, d3.data());
              omp_set_num_threads(before);
              ASSERT_EQ(std::memcmp(d1.data(), d3.data(), d1.size() * 4), 0);
            }
          }
        }
      }
    }
  }
}

TEST(Fp8QuantizeCpu, DequantizeIsCodeTimesScaleInv) {
  const int64_t rows = 130, cols = 200;
  const std::vector<float> x = random_matrix(rows, cols, 61);
  for (Fp8Tiling t : kTilings) {
    for (Fp8Format f : kFormats) {
      const Quantized q = run_quantize(x, nullptr, rows, cols, t, f, 0, true, nullptr);
      Fp8Operand op{q.codes.data(), q.scale_inv.data(), rows, cols, t, f, true};
      std::vector<float> d(x.size());
      std::vector<uint16_t> d16(x.size());
      fp8_dequantize_f32_cpu(op, d.data());
      fp8_dequantize_bf16_cpu(op, d16.data());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = size_t(r * cols + c);
          const double want = double(nm::fp8_decode(q.codes[i], f)) * double(q.scale_inv[size_t(nm::fp8_scale_index(t, r, c, cols))]);
          ASSERT_EQ(double(d[i]), want) << name(t) << " (" << r << ", " << c << "): exact with power-of-two scales";
          ASSERT_EQ(double(nm::bf16_to_f32(d16[i])), want) << name(t) << ": and exact in bf16";
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The emulated FP8 GEMM.

struct GemmCase { int64_t m, n, k; Trans ta, tb; Fp8Tiling tile_a, tile_b; Fp8Format fa, fb; bool acc; };

// Quantizes a random (rows, cols) matrix; keeps the codes and scales alive for the operand.
struct OwnedOperand {
  Quantized q;
  Fp8Operand op;
};
OwnedOperand make_operand(int64_t rows, int64_t cols, Fp8Tiling t, Fp8Format f, bool pow2, uint64_t seed) {
  OwnedOperand o;
  const std::vector<float> x = random_matrix(rows, cols, seed);
  o.q = run_quantize(x, nullptr, rows, cols, t, f, 0, pow2, nullptr);
  o.op = Fp8Operand{o.q.codes.data(), o.q.scale_inv.data(), rows, cols, t, f, pow2};
  return o;
}

// The operand dequantized as the emulation defines it: q * s_inv rounded once to fp32.
std::vector<float> dequantized(const Fp8Operand& x) {
  std::vector<float> d(size_t(x.rows * x.cols));
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t c = 0; c < x.cols; ++c) {
      d[size_t(r * x.cols + c)] = nm::fp8_dequantize(x.codes[size_t(r * x.cols + c)],
                                                     x.scale_inv[size_t(nm::fp8_scale_index(x.tiling, r, c, x.cols))], x.format);
    }
  }
  return d;
}

void check_gemm(const GemmCase& g, bool pow2, NnOps* ops) {
  const int64_t a_rows = g.ta == Trans::kN ? g.m : g.k, a_cols = g.ta == Trans::kN ? g.k : g.m;
  const int64_t b_rows = g.tb == Trans::kN ? g.k : g.n, b_cols = g.tb == Trans::kN ? g.n : g.k;
  const OwnedOperand a = make_operand(a_rows, a_cols, g.tile_a, g.fa, pow2, uint64_t(g.m * 31 + g.k));
  const OwnedOperand b = make_operand(b_rows, b_cols, g.tile_b, g.fb, pow2, uint64_t(g.n * 17 + g.k * 5 + 1));
  const std::vector<float> da = dequantized(a.op), db = dequantized(b.op);
  test::SplitMix64 rng(uint64_t(g.m + g.n + g.k));
  std::vector<float> c(size_t(g.m * g.n));
  for (auto& v : c) v = rng.uniform() * 2 - 1;
  const std::vector<float> c0 = c;

  const int64_t ws_bytes =
      ops != nullptr ? ops->fp8_matmul_workspace_bytes(a_rows * a_cols, b_rows * b_cols, pow2)
                     : nm::fp8_matmul_workspace_bytes(nm::Fp8GemmEngine::kEmulated, a_rows * a_cols,
                                                            b_rows * b_cols, pow2);
  ASSERT_EQ(ws_bytes, (a_rows * a_cols + b_rows * b_cols) * (pow2 ? 2 : 4));
  // Guard bytes after the workspace: the GEMM must stay within what it asked for.
  std::vector<uint8_t> ws(size_t(ws_bytes) + 64, 0xA5);
  const GemmShape shape{g.m, g.n, g.k, 0, 0, 0, g.ta, g.tb};
  if (ops != nullptr) ops->matmul_fp8(shape, a.op, b.op, c.data(), g.acc, ws.data());
  else fp8_matmul_cpu(shape, a.op, b.op, c.data(), g.acc, ws.data());
  for (size_t i = size_t(ws_bytes); i < ws.size(); ++i) ASSERT_EQ(ws[i], 0xA5) << "workspace overrun";

  std::ostringstream label;
  label << "m" << g.m << " n" << g.n << " k" << g.k << (g.ta == Trans::kT ? " T" : " N") << (g.tb == Trans::kT ? "T " : "N ")
        << name(g.tile_a) << "/" << name(g.tile_b) << " " << name(g.fa) << "/" << name(g.fb)
        << (pow2 ? " pow2" : " any-scale") << (g.acc ? " acc" : "");
  const std::string what = label.str();
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double ref = g.acc ? double(c0[size_t(i * g.n + j)]) : 0.0, mag = std::fabs(ref);
      for (int64_t p = 0; p < g.k; ++p) {
        const double x = g.ta == Trans::kN ? da[size_t(i * a_cols + p)] : da[size_t(p * a_cols + i)];
        const double y = g.tb == Trans::kN ? db[size_t(p * b_cols + j)] : db[size_t(j * b_cols + p)];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      // fp32 accumulation of k products (k + 1 terms with accumulate) in any order: the error
      // is at most gamma_{k+1} * sum |terms|, gamma_n = n u / (1 - n u), u = 2^-24. With
      // power-of-two scales the products are exact (4-bit significands); with other scales
      // oneDNN's fp32 products add one more rounding each, inside the same gamma_{k+1}.
      const double nu = double(g.k + 1) * 0x1p-24;
      const double tol = nu / (1.0 - nu) * mag;
      ASSERT_LE(std::fabs(double(c[size_t(i * g.n + j)]) - ref), tol)
          << what << " at (" << i << ", " << j << "): " << c[size_t(i * g.n + j)] << " vs " << ref;
    }
  }
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> out;
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 130}, {33, 5, 257}, {130, 67, 129}, {3, 200, 31}};
  const Trans combos[][2] = {{Trans::kN, Trans::kN}, {Trans::kN, Trans::kT}, {Trans::kT, Trans::kN},
                             {Trans::kT, Trans::kT}};
  int i = 0;
  for (const auto& s : shapes) {
    for (const auto& tr : combos) {
      // Rotate the tilings and formats through the cases (E5M2 x E4M3 is the gradient GEMM).
      const Fp8Tiling ta = kTilings[size_t(i % 4)], tb = kTilings[size_t((i / 4 + i) % 4)];
      const Fp8Format fa = i % 3 == 0 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
      const Fp8Format fb = i % 5 == 0 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
      out.push_back({s[0], s[1], s[2], tr[0], tr[1], ta, tb, fa, fb, i % 2 == 1});
      ++i;
    }
  }
  return out;
}

TEST(Fp8MatmulCpu, PowerOfTwoScalesMatchFp64GemmOfDequantizedOperands) {
  for (const GemmCase& g : gemm_cases()) {
    check_gemm(g, true, nullptr);
    if (HasFatalFailure()) return;
  }
}

TEST(Fp8MatmulCpu, OtherScalesMatchFp64GemmOfDequantizedOperands) {
  for (const GemmCase& g : gemm_cases()) {
    check_gemm(g, false, nullptr);
    if (HasFatalFailure()) return;
  }
}

TEST(Fp8MatmulCpu, EveryTilingPairThroughCpuNnOps) {
  CpuNnOps ops;
  for (Fp8Tiling ta : kTilings) {
    for (Fp8Tiling tb : kTilings) {
      for (bool pow2 : {true, false}) {
        check_gemm({9, 130, 140, Trans::kN, Trans::kT, ta, tb, Fp8Format::kE4M3, Fp8Format::kE4M3, false}, pow2, &ops);
        check_gemm({129, 11, 257, Trans::kT, Trans::kN, ta, tb, Fp8Format::kE5M2, Fp8Format::kE4M3, true}, pow2, &ops);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument checks through CpuNnOps: refused with farthing::Error naming the problem.

template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no farthing::Error thrown (expected one mentioning \"" << needle << "\")";
  } catch (const farthing::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

TEST(Fp8OpChecks, MatmulRefusesOperandsThatDoNotFit) {
  CpuNnOps ops;
  const OwnedOperand a = make_operand(8, 32, Fp8Tiling::kRow1x128, Fp8Format::kE4M3, true, 1);
  const OwnedOperand b = make_operand(32, 16, Fp8Tiling::kBlock128, Fp8Format::kE4M3, true, 2);
  std::vector<float> c(8 * 16);
  std::vector<uint8_t> ws(size_t(ops.fp8_matmul_workspace_bytes(8 * 32, 32 * 16, true)));
  // The good call works.
  ops.matmul_fp8(GemmShape{8, 16, 32, 0, 0, 0, Trans::kN, Trans::kN}, a.op, b.op, c.data(), false, ws.data());
  // k disagrees with A's columns.
  expect_error([&] { ops.matmul_fp8(GemmShape{8, 16, 31, 0, 0, 0, Trans::kN, Trans::kN}, a.op, b.op, c.data(), false, ws.data()); },
               "do not fit the GEMM");
  // B stored as (k, n) but declared transposed.
  expect_error([&] { ops.matmul_fp8(GemmShape{8, 16, 32, 0, 0, 0, Trans::kN, Trans::kT}, a.op, b.op, c.data(), false, ws.data()); },
               "do not fit the GEMM");
  // m disagrees with A's rows.
  expect_error([&] { ops.matmul_fp8(GemmShape{9, 16, 32, 0, 0, 0, Trans::kN, Trans::kN}, a.op, b.op, c.data(), false, ws.data()); },
               "(8 x 32)");
  // Strided operands are not FP8 operands.
  expect_error([&] { ops.matmul_fp8(GemmShape{8, 16, 32, 40, 0, 0, Trans::kN, Trans::kN}, a.op, b.op, c.data(), false, ws.data()); },
               "dense");
  Fp8Operand no_scales = b.op;
  no_scales.scale_inv = nullptr;
  expect_error([&] { ops.matmul_fp8(GemmShape{8, 16, 32, 0, 0, 0, Trans::kN, Trans::kN}, a.op, no_scales, c.data(), false, ws.data()); },
               "scales are required");
}

TEST(Fp8OpChecks, QuantizeRefusesBadArguments) {
  CpuNnOps ops;
  const int64_t rows = 4, cols = 8;
  std::vector<float> x(size_t(rows * cols), 1.0f);
  std::vector<uint16_t> xh(x.size(), nm::f32_to_bf16_rne(1.0f));
  std::vector<uint8_t> codes(x.size());
  std::vector<float> s_inv(size_t(rows * cols));
  const float given = 2.0f;
  auto args = [&] {
    Fp8QuantizeArgs a;
    a.x_f32 = x.data();
    a.rows = rows;
    a.cols = cols;
    a.codes = codes.data();
    a.scale_inv = s_inv.data();
    return a;
  };
  ops.fp8_quantize(args());  // the good call works
  for (Fp8Tiling t : {Fp8Tiling::kRow1x128, Fp8Tiling::kCol128x1, Fp8Tiling::kBlock128}) {
    Fp8QuantizeArgs a = args();
    a.tiling = t;
    a.given_scale = &given;
    expect_error([&] { ops.fp8_quantize(a); }, "per-tensor tiling");
  }
  {
    Fp8QuantizeArgs a = args();
    a.given_scale = &given;
    ops.fp8_quantize(a);  // a given scale with per-tensor tiling is fine
    EXPECT_EQ(s_inv[0], 0.5f);
  }
  {
    Fp8QuantizeArgs a = args();
    a.x_bf16 = xh.data();
    expect_error([&] { ops.fp8_quantize(a); }, "exactly one of x_f32, x_bf16");
    a.x_f32 = nullptr;
    a.x_bf16 = nullptr;
    expect_error([&] { ops.fp8_quantize(a); }, "exactly one of x_f32, x_bf16");
  }
  {
    Fp8QuantizeArgs a = args();
    a.cols = 0;
    expect_error([&] { ops.fp8_quantize(a); }, "empty matrix");
  }
  {
    Fp8QuantizeArgs a = args();
    a.margin = 33;
    expect_error([&] { ops.fp8_quantize(a); }, "margin 33");
    a.margin = -1;
    expect_error([&] { ops.fp8_quantize(a); }, "margin -1");
  }
  {
    Fp8QuantizeArgs a = args();
    a.scale_inv = nullptr;
    expect_error([&] { ops.fp8_quantize(a); }, "codes and scale_inv are required");
  }
}

}  // namespace
}  // namespace farthing::kernels

// test_matmul_cpu.cpp — oneDNN matmuls against a plain double-precision loop for every
// transpose combination, strided operands, accumulation and awkward tails (one tile and many,
// with short last tiles); bf16 mode against the loop over bf16-rounded inputs; primitives are
// reused, not rebuilt; the tiling depends on the problem only, and C's bits on no thread count;
// a bf16 C is the fp32 C (plus the bias rounded to bf16) rounded once, and the bias rounding is
// the contract, on data where the other orders give other bits; matmul_add_product adds the whole
// product once.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/gemm_tiling.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"
#include "tests/support/test_support.h"

namespace farthing::kernels {
namespace {

struct Case { int64_t m, n, k; Trans ta, tb; int64_t pad; bool acc; };

void check(GemmDtype dtype, const Case& c) {
  test::SplitMix64 rng(uint64_t(c.m * 131 + c.n * 17 + c.k));
  const int64_t a_rows = c.ta == Trans::kN ? c.m : c.k, a_cols = c.ta == Trans::kN ? c.k : c.m;
  const int64_t b_rows = c.tb == Trans::kN ? c.k : c.n, b_cols = c.tb == Trans::kN ? c.n : c.k;
  const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
  std::vector<float> a(size_t(a_rows * lda)), b(size_t(b_rows * ldb)), cm(size_t(c.m * ldc));
  for (auto& v : a) v = rng.uniform() * 2 - 1;
  for (auto& v : b) v = rng.uniform() * 2 - 1;
  for (auto& v : cm) v = rng.uniform();
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  auto narrow = [&](float& v, uint16_t& h) {
    h = dtype == GemmDtype::kBF16 ? numerics::f32_to_bf16_rne(v) : numerics::f32_to_fp16_rne(v);
    v = dtype == GemmDtype::kBF16 ? numerics::bf16_to_f32(h) : numerics::fp16_to_f32(h);
  };
  if (dtype != GemmDtype::kF32) {
    for (size_t i = 0; i < a.size(); ++i) narrow(a[i], a16[i]);
    for (size_t i = 0; i < b.size(); ++i) narrow(b[i], b16[i]);
  }
  const std::vector<float> c0 = cm;
  GemmShape s{c.m, c.n, c.k, lda, ldb, ldc, c.ta, c.tb};
  const void* ap = dtype != GemmDtype::kF32 ? static_cast<const void*>(a16.data()) : a.data();
  const void* bp = dtype != GemmDtype::kF32 ? static_cast<const void*>(b16.data()) : b.data();
  matmul_cpu(dtype, s, ap, bp, cm.data(), c.acc);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double ref = c.acc ? c0[size_t(i * ldc + j)] : 0.0, mag = std::fabs(ref);
      for (int64_t p = 0; p < c.k; ++p) {
        const double x = c.ta == Trans::kN ? a[size_t(i * lda + p)] : a[size_t(p * lda + i)];
        const double y = c.tb == Trans::kN ? b[size_t(p * ldb + j)] : b[size_t(j * ldb + p)];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      // fp32 accumulation of k products: error <= k * 2^-24 * sum |x y| (loose bound).
      ASSERT_NEAR(cm[size_t(i * ldc + j)], ref, 1e-6 + double(c.k) * 6e-8 * mag)
          << "m" << c.m << " n" << c.n << " k" << c.k << " at (" << i << "," << j << ")";
    }
    for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(cm[size_t(i * ldc + j)], c0[size_t(i * ldc + j)]) << "wrote past n";
  }
}

TEST(MatmulCpu, AllTransposesStridesTailsAndAccumulation) {
  for (GemmDtype dt : {GemmDtype::kF32, GemmDtype::kBF16, GemmDtype::kF16}) {
    for (Trans ta : {Trans::kN, Trans::kT}) {
      for (Trans tb : {Trans::kN, Trans::kT}) {
        for (bool acc : {false, true}) {
          for (Case c : {Case{1, 16, 7, ta, tb, 0, acc}, Case{5, 160, 33, ta, tb, 3, acc},
                         Case{217, 256, 64, ta, tb, 0, acc}, Case{64, 9, 300, ta, tb, 5, acc},
                         Case{300, 520, 96, ta, tb, 3, acc}}) {  // 2 x 5 tiles, the last ones short
            check(dt, c);
          }
        }
      }
    }
  }
}

TEST(MatmulCpu, PrimitivesAreCachedNotRebuilt) {
  std::vector<float> a(48 * 40, 0.5f), b(40 * 24, 0.25f), c(48 * 24);
  GemmShape s{48, 24, 40};
  matmul_cpu(GemmDtype::kF32, s, a.data(), b.data(), c.data(), false);
  const int64_t built = matmul_primitive_count_cpu();
  for (int i = 0; i < 5; ++i) matmul_cpu(GemmDtype::kF32, s, a.data(), b.data(), c.data(), false);
  EXPECT_EQ(matmul_primitive_count_cpu(), built);
  EXPECT_FLOAT_EQ(c[0], 40 * 0.125f);
  std::printf("  bf16 GEMM here: %s\n", matmul_impl_name_cpu(GemmDtype::kBF16, s).c_str());
}

// The tiles cover C exactly and follow the documented rule: 256 x 256, halved (the longer side
// first, not below 64, not below 2^21 multiply-adds a tile) while there are fewer than 32.
TEST(GemmTiling, TilesDependOnTheProblemAndCoverIt) {
  struct Expect { int64_t m, n, k, tile_m, tile_n; };
  for (const Expect& e : {Expect{1024, 3072, 768, 256, 256},   // GPT-2's MLP: 48 tiles already
                          Expect{768, 768, 1024, 128, 128},    // a weight gradient: 36 tiles
                          Expect{64, 1024, 64, 64, 256},       // attention's scores: tiny tiles refused
                          Expect{48, 24, 40, 48, 24},          // one tile
                          Expect{1, 50257, 768, 1, 256},       // one row, many tiles
                          Expect{300, 520, 96, 256, 128}}) {
    const GemmTiling t = gemm_tiling(e.m, e.n, e.k);
    EXPECT_EQ(t.tile_m, e.tile_m) << e.m << "x" << e.n << "x" << e.k;
    EXPECT_EQ(t.tile_n, e.tile_n) << e.m << "x" << e.n << "x" << e.k;
    EXPECT_GE(t.tiles_m * t.tile_m, e.m);
    EXPECT_LT((t.tiles_m - 1) * t.tile_m, e.m);
    EXPECT_GE(t.tiles_n * t.tile_n, e.n);
    EXPECT_LT((t.tiles_n - 1) * t.tile_n, e.n);
  }
}

// C's bits do not depend on the thread count: many tiles, short last tiles, every transpose,
// accumulation, fp32 and bf16 (bf16 widened where the CPU has no native bf16 GEMM).
TEST(MatmulCpu, BitwiseAtAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (GemmDtype dt : {GemmDtype::kF32, GemmDtype::kBF16}) {
    for (Trans ta : {Trans::kN, Trans::kT}) {
      for (Trans tb : {Trans::kN, Trans::kT}) {
        const int64_t m = 333, n = 700, k = 1500;  // 2 x 3 tiles of 256 x 256 (k keeps them large)
        test::SplitMix64 rng(uint64_t(int(ta) * 2 + int(tb)));
        const size_t elem = dt == GemmDtype::kF32 ? 4 : 2;
        std::vector<uint8_t> a(size_t(m * k) * elem), b(size_t(k * n) * elem);
        for (size_t i = 0; i < a.size() / elem; ++i) {
          const float v = rng.uniform() * 2 - 1;
          if (dt == GemmDtype::kF32) std::memcpy(&a[i * 4], &v, 4);
          else { const uint16_t h = numerics::f32_to_bf16_rne(v); std::memcpy(&a[i * 2], &h, 2); }
        }
        for (size_t i = 0; i < b.size() / elem; ++i) {
          const float v = rng.uniform() * 2 - 1;
          if (dt == GemmDtype::kF32) std::memcpy(&b[i * 4], &v, 4);
          else { const uint16_t h = numerics::f32_to_bf16_rne(v); std::memcpy(&b[i * 2], &h, 2); }
        }
        const GemmShape s{m, n, k, 0, 0, 0, ta, tb};
        auto run = [&](int threads) {
          omp_set_num_threads(threads);
          std::vector<float> c(size_t(m * n), 0.5f);
          matmul_cpu(dt, s, a.data(), b.data(), c.data(), true);
          return c;
        };
        const std::vector<float> one = run(1);
        for (int threads : {2, 3, 5}) {
          const std::vector<float> got = run(threads);
          ASSERT_EQ(std::memcmp(one.data(), got.data(), one.size() * 4), 0)
              << "1 vs " << threads << " threads differ; dtype " << int(dt) << " ta " << int(ta) << " tb " << int(tb);
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

// matmul_add_product adds the whole product once: bit for bit C + (matmul_cpu without accumulate),
// element by element, where matmul_cpu's accumulate (oneDNN's sum post-op) adds C in before the
// last K-block once K is long (1500 here; past 256 rows on AVX-512, 64 on AVX2). Onto a zero C
// it is matmul_cpu's accumulate onto zero, and matmul_cpu without accumulate, bit for bit: the
// gradients in place, written or added, keep the bits of a zeroed accumulator's. A padded ldc's
// padding is left alone.
TEST(MatmulCpu, AddProductAddsTheWholeProductOnce) {
  for (GemmDtype dt : {GemmDtype::kF32, GemmDtype::kBF16}) {
    for (Trans ta : {Trans::kN, Trans::kT}) {
      for (Case c : {Case{5, 160, 33, ta, Trans::kN, 3, true}, Case{333, 700, 1500, ta, Trans::kN, 0, true}}) {
        test::SplitMix64 rng(uint64_t(c.m * 3 + c.n + c.k));
        const size_t elem = dt == GemmDtype::kF32 ? 4 : 2;
        const int64_t ldc = c.n + c.pad;
        std::vector<uint8_t> a(size_t(c.m * c.k) * elem), b(size_t(c.k * c.n) * elem);
        for (std::vector<uint8_t>* x : {&a, &b}) {
          for (size_t i = 0; i < x->size() / elem; ++i) {
            const float v = rng.uniform() * 2 - 1;
            if (dt == GemmDtype::kF32) std::memcpy(&(*x)[i * 4], &v, 4);
            else { const uint16_t h = numerics::f32_to_bf16_rne(v); std::memcpy(&(*x)[i * 2], &h, 2); }
          }
        }
        const GemmShape s{c.m, c.n, c.k, 0, 0, ldc, ta, Trans::kN};
        std::vector<float> product(size_t(c.m * ldc), 0.0f), kept(size_t(c.m * ldc));
        for (auto& v : kept) v = (rng.uniform() * 2 - 1) * 64;
        matmul_cpu(dt, s, a.data(), b.data(), product.data(), false);
        std::vector<float> in_place = kept;
        matmul_add_product_cpu(dt, s, a.data(), b.data(), in_place.data());
        size_t differ = 0, padding_written = 0;
        for (int64_t i = 0; i < c.m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            const size_t x = size_t(i * ldc + j);
            if (j >= c.n) {
              padding_written += std::memcmp(&in_place[x], &kept[x], 4) != 0;
              continue;
            }
            const float want = kept[x] + product[x];
            differ += std::memcmp(&in_place[x], &want, 4) != 0;
          }
        }
        EXPECT_EQ(differ, 0u) << "m" << c.m << " n" << c.n << " k" << c.k << " dtype " << int(dt) << " ta " << int(ta);
        EXPECT_EQ(padding_written, 0u) << "wrote past n";
        std::vector<float> onto_zero(product.size(), 0.0f), accumulated(product.size(), 0.0f);
        matmul_add_product_cpu(dt, s, a.data(), b.data(), onto_zero.data());
        matmul_cpu(dt, s, a.data(), b.data(), accumulated.data(), true);
        EXPECT_EQ(std::memcmp(onto_zero.data(), accumulated.data(), onto_zero.size() * 4), 0)
            << "onto zero: m" << c.m << " k" << c.k << " dtype " << int(dt) << " ta " << int(ta);
        // Written with beta 0, the product is the one added: gradients written where a zeroed
        // accumulator was added to keep its bits.
        EXPECT_EQ(std::memcmp(onto_zero.data(), product.data(), onto_zero.size() * 4), 0)
            << "written: m" << c.m << " k" << c.k << " dtype " << int(dt) << " ta " << int(ta);
      }
    }
  }
}

// A bf16 GEMM output is bit for bit the fp32 GEMM, plus the bias in fp32, rounded to nearest
// even: one tile and many, short last tiles, every transpose, a padded ldc (the padding is left
// alone), with and without a bias, fp32 and bf16 operands (widened where bf16 is not native).
TEST(MatmulCpu, Bf16OutputIsTheFp32ResultRoundedOnce) {
  for (GemmDtype dt : {GemmDtype::kF32, GemmDtype::kBF16}) {
    for (Trans ta : {Trans::kN, Trans::kT}) {
      for (Trans tb : {Trans::kN, Trans::kT}) {
        for (bool with_bias : {false, true}) {
          for (Case c : {Case{5, 160, 33, ta, tb, 3, false}, Case{300, 520, 96, ta, tb, 3, false},
                         Case{333, 700, 1500, ta, tb, 0, false}}) {
            test::SplitMix64 rng(uint64_t(c.m * 7 + c.n + c.k + with_bias));
            const int64_t a_elems = c.m * c.k, b_elems = c.k * c.n, ldc = c.n + c.pad;
            const size_t elem = dt == GemmDtype::kF32 ? 4 : 2;
            std::vector<uint8_t> a(size_t(a_elems) * elem), b(size_t(b_elems) * elem);
            auto fill = [&](std::vector<uint8_t>& x) {
              for (size_t i = 0; i < x.size() / elem; ++i) {
                const float v = rng.uniform() * 2 - 1;
                if (dt == GemmDtype::kF32) std::memcpy(&x[i * 4], &v, 4);
                else { const uint16_t h = numerics::f32_to_bf16_rne(v); std::memcpy(&x[i * 2], &h, 2); }
              }
            };
            fill(a);
            fill(b);
            std::vector<float> bias(size_t(c.n));
            for (auto& v : bias) v = rng.uniform() * 4 - 2;
            const GemmShape s{c.m, c.n, c.k, 0, 0, ldc, ta, tb};
            std::vector<float> c32(size_t(c.m * ldc), 0.0f);
            matmul_cpu(dt, s, a.data(), b.data(), c32.data(), false);
            std::vector<uint16_t> c16(size_t(c.m * ldc), 0xABCD);
            matmul_bf16_out_cpu(dt, s, a.data(), b.data(), with_bias ? bias.data() : nullptr, nullptr, c16.data());
            size_t differ = 0, padding_written = 0;
            for (int64_t i = 0; i < c.m; ++i) {
              for (int64_t j = 0; j < ldc; ++j) {
                const uint16_t got = c16[size_t(i * ldc + j)];
                if (j >= c.n) {
                  padding_written += got != 0xABCD;
                  continue;
                }
                // The bias a bf16 output adds is rounded to bf16 first (numerics/gemm_bias.h).
                const float rounded_bias = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(bias[size_t(j)]));
                const float sum = c32[size_t(i * ldc + j)] + (with_bias ? rounded_bias : 0.0f);
                differ += got != numerics::f32_to_bf16_rne(sum);
              }
            }
            EXPECT_EQ(differ, 0u) << "m" << c.m << " n" << c.n << " k" << c.k << " dtype " << int(dt) << " ta "
                                  << int(ta) << " tb " << int(tb) << " bias " << with_bias;
            EXPECT_EQ(padding_written, 0u) << "wrote past n";
          }
        }
      }
    }
  }
}

// The bf16-output contract (docs/numerics.md §10): C = bf16(acc + add + bf16(bias)), the bias
// rounded to bf16, added in fp32 after the residual, then one rounding. The data make every fp32
// sum exact (A and B multiples of 1/16 with k = 16, the residual a multiple of 1/64, bf16
// holding it), so the expected bits follow from the contract whatever order the GEMM sums in. The test
// also shows that the data tell the contract from the two mistakes it guards against: the fp32
// bias added unrounded, and the bias added after the sum is rounded (a second rounding).
TEST(MatmulCpu, Bf16OutputAddsTheBiasRoundedToBf16BeforeItsOneRounding) {
  const int64_t m = 37, n = 61, k = 16;
  test::SplitMix64 rng(2024);
  const auto sixteenths = [&] { return float(int(rng.next() % 33) - 16) / 16.0f; };
  std::vector<uint16_t> a(size_t(m * k)), b(size_t(k * n)), add(size_t(m * n));
  std::vector<float> av(a.size()), bv(b.size()), addv(add.size()), bias(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = numerics::f32_to_bf16_rne(av[i] = sixteenths());
  for (size_t i = 0; i < b.size(); ++i) b[i] = numerics::f32_to_bf16_rne(bv[i] = sixteenths());
  for (size_t i = 0; i < add.size(); ++i) {
    addv[i] = float(int(rng.next() % 511) - 255) / 64.0f;
    add[i] = numerics::f32_to_bf16_rne(addv[i]);
    ASSERT_EQ(numerics::bf16_to_f32(add[i]), addv[i]);
  }
  for (auto& v : bias) v = rng.uniform() * 4 - 2;
  const GemmShape s{m, n, k, 0, 0, 0, Trans::kN, Trans::kN};
  for (bool with_add : {false, true}) {
    std::vector<uint16_t> c(size_t(m * n));
    matmul_bf16_out_cpu(GemmDtype::kBF16, s, a.data(), b.data(), bias.data(), with_add ? add.data() : nullptr,
                        c.data());
    size_t differ = 0, unrounded_bias_differs = 0, rounded_twice_differs = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = with_add ? double(addv[size_t(i * n + j)]) : 0.0;
        for (int64_t p = 0; p < k; ++p) acc += double(av[size_t(i * k + p)]) * double(bv[size_t(p * n + j)]);
        const float exact = float(acc);  // a multiple of 1/256 below 32: exact, and often not a bf16
        ASSERT_EQ(double(exact), acc);
        const float bias16 = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(bias[size_t(j)]));
        const uint16_t expected = numerics::f32_to_bf16_rne(exact + bias16);
        differ += c[size_t(i * n + j)] != expected;
        unrounded_bias_differs += numerics::f32_to_bf16_rne(exact + bias[size_t(j)]) != expected;
        const float rounded_sum = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(exact));
        rounded_twice_differs += numerics::f32_to_bf16_rne(rounded_sum + bias16) != expected;
      }
    }
    EXPECT_EQ(differ, 0u) << "of " << m * n << " outputs differ from bf16(acc + add + bf16(bias)), add " << with_add;
    EXPECT_GT(unrounded_bias_differs, 0u) << "the data cannot tell an unrounded bias from the contract";
    EXPECT_GT(rounded_twice_differs, 0u) << "the data cannot tell a bias added after the rounding from the contract";
  }
}

}  // namespace
}  // namespace farthing::kernels

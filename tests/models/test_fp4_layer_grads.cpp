// test_fp4_layer_grads.cpp — each FP4 linear layer of a micro Llama (models/common/fp4_linears.h),
// stochastic rounding off, against a reference written here from the formats' definitions:
//  - the operands of every FP4 GEMM (forward, dgrad, wgrad) are formed here from the layer's
//    fp32 activations and gradients and its bf16 weight, transformed by the random Hadamard
//    transform where the recipe says (dense Sylvester matrix times the signs the step's key
//    draws, on BOTH operands, along the reduced dimension, full chunks only), quantized by
//    NVFP4's or MXFP4's definition (E4M3 or E8M0 block scales, 2D weight tiles where the recipe
//    says, E2M1 elements rounded to nearest even; the value tables and rounding written here,
//    not the library's helpers) and dequantized as e2m1 x block scale (x tensor scale);
//  - the layer's y, dx and dW must equal the fp64 GEMM of those operands within the fp32 bound
//    of a k-term sum: |c - ref| <= (k + 2) 2^-24 sum |a||b| (k - 1 roundings of the sum, one of
//    the tensor scales' product, one of its product with the sum);
//  - and, as a second check that the FP4 GEMMs compute the layer's own gradients, y, dx and dW
//    against the bf16 GEMMs of the unquantized operands, within a relative RMS of 0.25 (see
//    kRelativeRmsBound).
// The inputs are small integers times powers of two, so the transform is exact in fp32 and the
// library and this reference quantize the same values.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/fp4_policy.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/hadamard.h"
#include "models/common/fp4_linears.h"
#include "models/common/presets.h"
#include "tests/support/test_support.h"

namespace farthing::models {
namespace {

constexpr int64_t kBatch = 2, kSeq = 32, kM = kBatch * kSeq;
constexpr uint64_t kSeed = 1234;
constexpr uint32_t kStep = 3;

// --- the formats, from their definitions ---------------------------------------------------------

// Round to nearest, ties to the even code, over a table of the non-negative values of codes
// 0, 1, 2, ... (ascending); saturating at the largest. Returns the value.
double round_to_table(double v, const std::vector<double>& table) {
  const double a = std::fabs(v);
  double out = table.back();
  for (size_t i = 0; i + 1 < table.size(); ++i) {
    if (a >= table[i + 1]) continue;
    const double mid = (table[i] + table[i + 1]) / 2;
    out = a < mid ? table[i] : a > mid ? table[i + 1] : (i % 2 == 0 ? table[i] : table[i + 1]);
    break;
  }
  return v < 0 ? -out : out;
}

// E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 (OCP MX v1.0).
const std::vector<double>& e2m1_values() {
  static const std::vector<double> t{0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return t;
}

// E4M3 (OCP fp8 "fn"): bias 7, three mantissa bits, subnormals m 2^-9, largest 448 (code 0x7E).
const std::vector<double>& e4m3_values() {
  static const std::vector<double> t = [] {
    std::vector<double> v;
    for (int code = 0; code <= 0x7E; ++code) {
      const int e = code >> 3, m = code & 7;
      v.push_back(e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7));
    }
    return v;
  }();
  return t;
}

// The dequantized operand (rows, cols), reduced dimension as columns, blocks of `block` columns
// (or block x block tiles), as each format defines it.
std::vector<double> quantize_dequantize(const std::vector<float>& x, int64_t rows, int64_t cols, Fp4Scale scale,
                                        int block, bool tiles) {
  const int64_t band = tiles ? block : 1;
  float tensor_amax = 0.0f;
  for (float v : x) tensor_amax = std::max(tensor_amax, std::fabs(v));
  // NVFP4 (arXiv 2509.25149, each step one fp32 operation): s_enc = 6 * 448 / amax_tensor,
  // s_dec = 1 / s_enc; d_b = e4m3((amax_b / 6) * s_enc); x_i -> e2m1(x_i * (1 / (d_b * s_dec))).
  const float s_enc = tensor_amax > 0.0f ? (6.0f * 448.0f) / tensor_amax : 1.0f;
  const float s_dec = 1.0f / s_enc;
  std::vector<double> out(x.size());
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    for (int64_t c0 = 0; c0 < cols; c0 += block) {
      const int64_t r1 = std::min(rows, r0 + band), c1 = std::min(cols, c0 + block);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[size_t(r * cols + c)]));
      }
      float multiplier = 0.0f;
      double decode = 0.0;
      if (scale == Fp4Scale::kE4M3) {
        const float d = float(round_to_table(double((amax / 6.0f) * s_enc), e4m3_values()));
        multiplier = d == 0.0f ? 0.0f : 1.0f / (d * s_dec);
        decode = double(d) * double(s_dec);
      } else {
        // MXFP4 (OCP MX v1.0 §6.3): X = 2^(floor(log2 amax_b) - 2), at least 2^-127; x_i -> e2m1(x_i / X).
        const int e = amax > 0.0f ? std::max(std::ilogb(amax) - 2, -127) : -127;
        multiplier = float(std::ldexp(1.0, -e));
        decode = std::ldexp(1.0, e);
      }
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const size_t i = size_t(r * cols + c);
          out[i] = round_to_table(double(x[i] * multiplier), e2m1_values()) * decode;
        }
      }
    }
  }
  return out;
}

// In place along each row: every full chunk of n columns <- (1/sqrt n) H_n diag(signs) chunk,
// H_n the Sylvester Hadamard matrix, H[i][j] = (-1)^popcount(i & j).
void hadamard_rows(std::vector<float>& x, int64_t rows, int64_t cols, const std::vector<float>& signs) {
  const int64_t n = int64_t(signs.size());
  std::vector<double> chunk(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 + n <= cols; c0 += n) {
      float* p = &x[size_t(r * cols + c0)];
      for (int64_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += (__builtin_popcountll(uint64_t(i & j)) % 2 ? -1.0 : 1.0) * signs[size_t(j)] * p[j];
        chunk[size_t(i)] = s / std::sqrt(double(n));
      }
      for (int64_t i = 0; i < n; ++i) p[i] = float(chunk[size_t(i)]);
    }
  }
}

// --- the layer's three GEMMs ---------------------------------------------------------------------

// A GEMM operand before quantization: `rows` x `cols` (cols reduced), with its role.
struct Operand {
  std::vector<float> values;
  int64_t rows = 0, cols = 0;
  Fp4OperandRole role = Fp4OperandRole::kInput;
};

Operand transposed(const std::vector<float>& x, int64_t rows, int64_t cols, Fp4OperandRole role) {
  Operand t{std::vector<float>(x.size()), cols, rows, role};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t.values[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  }
  return t;
}

struct Reference {
  std::vector<double> fp4;    // the GEMM of the operands quantized by the reference
  std::vector<double> bound;  // its fp32 bound per element
  std::vector<double> bf16;   // the GEMM of the unquantized operands (bf16 already: see the inputs)
};

// C (a.rows, b.rows) = A · B^T, as GEMM g of projection p under `recipe`.
Reference reference_gemm(const Fp4Recipe& recipe, size_t p, Fp4Gemm g, Operand a, Operand b) {
  const int64_t m = a.rows, n = b.rows, k = a.cols;
  Reference ref{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n)),
                std::vector<double>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t l = 0; l < k; ++l) s += double(a.values[size_t(i * k + l)]) * double(b.values[size_t(j * k + l)]);
      ref.bf16[size_t(i * n + j)] = s;
    }
  }
  if (fp4_uses_rht(recipe, g)) {
    const numerics::RandomKey key{kSeed, kStep, numerics::RandomPurpose::kHadamardSigns};
    std::vector<float> signs(size_t(recipe.rht_size));
    const uint64_t first = (uint64_t(p) * 3 + uint64_t(g)) * uint64_t(recipe.rht_size);
    for (size_t i = 0; i < signs.size(); ++i) signs[i] = numerics::hadamard_sign(key, first + i);
    hadamard_rows(a.values, a.rows, a.cols, signs);
    hadamard_rows(b.values, b.rows, b.cols, signs);
  }
  const std::vector<double> qa = quantize_dequantize(a.values, m, k, recipe.scale, recipe.block, fp4_block_2d(recipe, a.role));
  const std::vector<double> qb = quantize_dequantize(b.values, n, k, recipe.scale, recipe.block, fp4_block_2d(recipe, b.role));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0, abs_sum = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        s += qa[size_t(i * k + l)] * qb[size_t(j * k + l)];
        abs_sum += std::fabs(qa[size_t(i * k + l)] * qb[size_t(j * k + l)]);
      }
      ref.fp4[size_t(i * n + j)] = s;
      ref.bound[size_t(i * n + j)] = double(k + 2) * std::ldexp(1.0, -24) * abs_sum;
    }
  }
  return ref;
}

// NOTE: the bf16 check's bound. Rounding an operand to E2M1 under its block scale errs by at most
// half a step, a fifth of the value or less for elements in the upper half of their block's range
// ([3, 6] in E2M1 units; a quarter where MXFP4's scale clips values up to 8 to 6), more for the
// small ones (all of them below 0.25 units), so over a block of Hadamard-spread or varied values
// the RMS error is of order 0.1 of the block's RMS; a product of two such operands adds the two
// (independent) errors: 0.1 to 0.2 relative RMS (the test prints the worst). 0.25 leaves room above
// that and is far below the error of a GEMM that transformed one operand only, dropped a scale or
// read a transpose wrong (of order the result itself: relative RMS ~1 or more; an RHT on one
// operand only gives 1.2).
constexpr double kRelativeRmsBound = 0.25;

struct Checked {
  double worst_relative_rms = 0.0;
  int gemms = 0;
};

void check_gemm(const char* what, size_t p, const std::vector<float>& got, const Reference& ref, Checked& checked) {
  ASSERT_EQ(got.size(), ref.fp4.size());
  size_t outside = 0, first = got.size();
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(double(got[i]) - ref.fp4[i]) <= ref.bound[i])) {
      if (outside++ == 0) first = i;
    }
    err2 += (double(got[i]) - ref.bf16[i]) * (double(got[i]) - ref.bf16[i]);
    ref2 += ref.bf16[i] * ref.bf16[i];
  }
  EXPECT_EQ(outside, 0u) << what << " of projection " << p << ": " << outside << " of " << got.size()
                         << " elements outside the fp32 bound of the reference; first at " << first << ": "
                         << (first < got.size() ? got[first] : 0.0f) << " vs "
                         << (first < got.size() ? ref.fp4[first] : 0.0) << " +- "
                         << (first < got.size() ? ref.bound[first] : 0.0);
  const double relative_rms = std::sqrt(err2 / ref2);
  EXPECT_LE(relative_rms, kRelativeRmsBound) << what << " of projection " << p << " against bf16";
  checked.worst_relative_rms = std::max(checked.worst_relative_rms, relative_rms);
  ++checked.gemms;
}

ModelConfig micro_llama() {
  ModelConfig c = preset_config("stories260k");
  c.name = "llama-micro";
  c.vocab_size = 64;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq_len = kSeq;
  return c;
}

// Small integers times a power of two per row (2^-2 .. 2^2 times `unit`): blocks of several scales,
// every value and every sum of the transform exact in fp32 (and bf16).
std::vector<float> dyadic(int64_t rows, int64_t cols, double unit, uint64_t seed) {
  test::SplitMix64 rng(seed);
  std::vector<float> x(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int v = int(rng.next() % 127) - 63;
      x[size_t(r * cols + c)] = float(std::ldexp(unit * v, int(r % 5) - 2));
    }
  }
  return x;
}

void check_recipe(const char* name, Fp4Recipe recipe) {
  SCOPED_TRACE(name);
  recipe.sr = Fp4Sr::kNone;  // round to nearest everywhere: the reference is deterministic
  recipe.sr_prescale = false;
  recipe.bf16_last_fraction = 0.0;  // every block's layers in FP4
  const TransformerSpec spec = make_spec(micro_llama());
  ASSERT_EQ(spec.orientation, WeightOrientation::kOutIn);
  NnOps& ops = backend_for(Device::cpu()).nn();
  Fp4Linears layers(spec, kBatch, kSeq, Fp4Options{&recipe, kSeed}, ops);
  layers.set_step(kStep);
  const std::vector<Fp4Projection> projections = Fp4Linears::projections(spec, recipe);
  ASSERT_EQ(projections.size(), size_t(4 * spec.config.n_layers));
  Checked checked;
  for (size_t p = 0; p < projections.size(); ++p) {
    const int64_t k = projections[p].k, n = projections[p].n;
    const std::vector<float> x = dyadic(kM, k, 1.0 / 64, 100 + p);
    const std::vector<float> dy = dyadic(kM, n, 1.0 / 4096, 200 + p);
    std::vector<float> w_f32 = dyadic(n, k, 1.0 / 256, 300 + p);
    std::vector<uint16_t> w(w_f32.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = numerics::f32_to_bf16_rne(w_f32[i]);  // exact
    const Operand x_op{x, kM, k, Fp4OperandRole::kInput}, w_op{w_f32, n, k, Fp4OperandRole::kWeight};
    if (layers.forward_covers(projections[p].weight)) {
      std::vector<float> y(size_t(kM * n));
      layers.forward(y.data(), x.data(), w.data(), projections[p].weight, kM, spec.orientation, false);
      check_gemm("y", p, y, reference_gemm(recipe, p, Fp4Gemm::kForward, x_op, w_op), checked);
    }
    ASSERT_TRUE(layers.backward_covers(projections[p].weight));
    std::vector<float> dx(size_t(kM * k)), dw(size_t(n * k), 0.0f);
    layers.backward(dx.data(), dw.data(), w.data(), projections[p].weight, dy.data(), x.data(), kM, spec.orientation);
    const Operand dy_op{dy, kM, n, Fp4OperandRole::kGradOutput};
    check_gemm("dx", p, dx,
               reference_gemm(recipe, p, Fp4Gemm::kDgrad, dy_op, transposed(w_f32, n, k, Fp4OperandRole::kWeight)),
               checked);
    check_gemm("dW", p, dw,
               reference_gemm(recipe, p, Fp4Gemm::kWgrad, transposed(dy, kM, n, Fp4OperandRole::kGradOutput),
                              transposed(x, kM, k, Fp4OperandRole::kInput)),
               checked);
  }
  std::printf("  %s: %d FP4 GEMMs within the fp32 bound of the reference; worst relative RMS against bf16 %.4f\n",
              name, checked.gemms, checked.worst_relative_rms);
}

TEST(Fp4LayerGrads, Nvfp4MatchesTheReference) { check_recipe("nvfp4", kNvfp4Paper); }
TEST(Fp4LayerGrads, Mxfp4MatchesTheReference) { check_recipe("mxfp4", kMxfp4Paper); }

}  // namespace
}  // namespace farthing::models

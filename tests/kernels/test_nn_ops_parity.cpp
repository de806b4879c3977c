// test_nn_ops_parity.cpp — every NnOps op, table-driven, against the CPU reference (CpuNnOps).
//
// One row per op x shape (kCases below): stories260K, SmolLM2-135M, Llama-3.2-1B and
// Llama-3.1-8B block shapes, odd T, T = 1, vocabularies 49,152 / 128,256 / 151,936 for the
// cross-entropy. Big shapes use few rows so the CPU reference stays quick. Each row runs its op on
// the same deterministic inputs on two NnOps sets and compares every output array under the
// row's tolerance class (kTolerances: one table, one line per comparison class).
//   CpuThreads/*: CpuNnOps with 1 OpenMP thread vs CpuNnOps with 2, 3 and 5 threads. The CPU ops
//     promise results independent of the thread count, so every output must be bitwise equal; this
//     half runs on every machine and is what tests the harness itself here. ctest also runs it under
//     each oneDNN ISA cap below the machine's own (ONEDNN_MAX_CPU_ISA), so an AMX machine checks the
//     AVX2 kernels too, and checks there that the cap took effect (OneDnnIsaCap).
//   Cuda/*: CpuNnOps vs the CUDA backend's NnOps under the class's tolerance; skipped (GTEST_SKIP)
//     without a GPU.
// Everything goes through Backend (allocate, NnOps::copy) so the test is plain C++.
// FP8 rows: fp8_quantize for every tiling, fp32 and bf16 inputs, odd shapes, T = 1, NaN, inf and
// all-zero tiles, current and delayed scaling (codes, s_inv and amax bitwise); matmul_fp8 for
// the model's three GEMMs (forward, dgrad, wgrad) with per-tensor and block tilings, on operands
// each backend quantized itself (class kFp8Gemm). FP4 rows likewise: fp4_quantize of NVFP4 and
// MXFP4 operands as the recipes make them (2D tiles, the Hadamard transform, stochastic rounding,
// transposed and bf16 sources, specials) bitwise; matmul_fp4 in the GEMM class.
// With FARTHING_SIM_SIZES (the gpu-sim entry, tools/gpu/sim_check.sh) the table is sim_cases():
// small rows for a GPU simulator at edges (odd sizes, several blocks, partial tiles, GQA,
// ignored rows, repeated token ids); its GEMM rows run a test double there (sim_check.sh).
// Relies on: framework/backend, kernels/numerics/bf16.h, minifloat.h, fp8_scaling.h, tests/support. Tested by: itself (an op broken
// on purpose makes its rows fail; see docs/cuda_ops.md).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/memory.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp8_scaling.h"
#include "kernels/numerics/minifloat.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

// ---- comparison classes --------------------------------------------------------------------

enum class Tol { kBitwise, kF32Reduction, kBf16Store, kAttention, kBf16Attention, kGemm, kFp8Gemm };

// max |candidate - reference| <= rel * max |reference| over each output array (the error is
// measured against the output's scale, since reductions with cancellation make per-element
// relative error meaningless). Values come from rounding bounds, not from GPU runs (none have
// run): fp32 sums of up to ~15k terms in another order differ by ~sqrt(n) * 2^-24 of their scale
// typically (<= 1e-5 with margin); attention chains a softmax and two such sums (1e-4); GEMMs
// take identical (already rounded) bf16/f16/fp32 inputs on both sides and accumulate in fp32,
// so only the summation order differs, over k up to 14,336 (1e-4). Loss sums (double) 1e-9.
// FP8 GEMMs (2e-3): both sides multiply the same codes and power-of-two scales, so every
// product is exact; the CPU emulation sums them in fp32 (bf16 GEMM of exactly dequantized
// values). cuBLASLt's FP8 kernels on Hopper sum each 128-wide k block in the tensor cores, which
// keep only about 14 bits of the running sum (DeepSeek-V3 report, section 3.3.2), then promote the
// block into fp32 (fast accumulation off). Per block that is at most ~2^-13 of the block's
// sum |a.b|; over k/128 blocks of zero-mean inputs these add like a random walk, so the error is
// ~2^-13 * sqrt(128 k) * E|ab| against max|C| ~ 4 sqrt(k) rms(ab): ~3e-4 of the scale, whatever
// k. 2e-3 leaves a factor ~7; a wrong scale on one 128-element tile moves C by ~10% of the scale.
// Rows that fall back to the dense GEMM (gemm_fp8_cublaslt.h) are within 1e-4, inside the class.
// bf16 attention (3e-2; AttentionShape::dtype kBF16: cuDNN's fused attention on a GPU, the fp32
// path elsewhere): Q, K, V, the probabilities before P.V, O, and in the backward dO, are each
// rounded to bf16 (2^-9 relative) and the rounding errors of about six such steps chain through
// the softmax and two dot products (~6 x 2^-9 = 1.2% of the scale at worst when they line up);
// a wrong mask, scale or head mapping moves outputs by tens of percent. The CUDA rows print the
// measured error beside the allowed one.
// bf16 stores of fp32 reductions (1/128; the norms' bf16 outputs, framework/backend/act_ref.h):
// the fp32 values differ as fp32 reductions do, and where two straddle a rounding boundary their
// bf16 values are one bf16 ulp apart, at most 2^-7 of the element and so of the scale.
struct Tolerance {
  Tol tol;
  const char* name;
  double rel;
};
constexpr Tolerance kTolerances[] = {
    {Tol::kBitwise, "bitwise", 0.0},
    {Tol::kF32Reduction, "fp32 reduction", 1e-5},
    {Tol::kBf16Store, "bf16 store of an fp32 reduction", 1.0 / 128},
    {Tol::kAttention, "fp32 attention", 1e-4},
    {Tol::kBf16Attention, "bf16 attention", 3e-2},
    {Tol::kGemm, "fp32-accumulated GEMM", 1e-4},
    {Tol::kFp8Gemm, "FP8 GEMM (tensor-core block accumulation)", 2e-3},
};
constexpr double kLossSumRel = 1e-9;

const Tolerance& tolerance_of(Tol t) {
  for (const Tolerance& x : kTolerances) {
    if (x.tol == t) return x;
  }
  return kTolerances[0];
}

// ---- buffers on a backend --------------------------------------------------------------------

// Device (or host, for the CPU backend) memory of one op run, freed at the end; values travel
// through NnOps::copy in 4-byte words, so byte sizes are rounded up to a multiple of 4.
class Arena {
 public:
  explicit Arena(Backend& backend) : backend_(backend), nn_(backend.nn()) {}
  ~Arena() {
    for (void* p : blocks_) backend_.free_bytes(p);
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  NnOps& nn() { return nn_; }

  template <class T>
  T* put(const std::vector<T>& host) {
    const size_t bytes = host.size() * sizeof(T), words = (bytes + 3) / 4;
    std::vector<float> staged(std::max<size_t>(words, 1), 0.0f);
    if (bytes > 0) std::memcpy(staged.data(), host.data(), bytes);
    float* p = static_cast<float*>(backend_.allocate_bytes(staged.size() * 4));
    blocks_.push_back(p);
    nn_.copy(p, staged.data(), int64_t(staged.size()));
    return reinterpret_cast<T*>(p);
  }
  // Uninitialised device scratch (a GEMM's workspace).
  void* raw(size_t bytes) {
    void* p = backend_.allocate_bytes(std::max<size_t>((bytes + 3) / 4 * 4, 4));
    blocks_.push_back(p);
    return p;
  }
  std::vector<float> get(const float* p, size_t n) {
    std::vector<float> host(n);
    if (n > 0) nn_.copy(host.data(), p, int64_t(n));
    return host;
  }
  // Bytes (FP8 codes), each as an exact float 0..255.
  std::vector<float> get_u8_as_f32(const uint8_t* p, size_t n) {
    std::vector<float> words((n + 3) / 4);
    if (!words.empty()) nn_.copy(words.data(), reinterpret_cast<const float*>(p), int64_t(words.size()));
    std::vector<uint8_t> bytes(n);
    if (n > 0) std::memcpy(bytes.data(), words.data(), n);
    return std::vector<float>(bytes.begin(), bytes.end());
  }
  double get_f64(const double* p) {
    float words[2];
    nn_.copy(words, reinterpret_cast<const float*>(p), 2);
    double host;
    std::memcpy(&host, words, sizeof host);
    return host;
  }
  std::vector<uint16_t> get_u16(const uint16_t* p, size_t n) {
    std::vector<float> words((n + 1) / 2);
    if (!words.empty()) nn_.copy(words.data(), reinterpret_cast<const float*>(p), int64_t(words.size()));
    std::vector<uint16_t> host(n);
    if (n > 0) std::memcpy(host.data(), words.data(), n * 2);
    return host;
  }

 private:
  Backend& backend_;
  NnOps& nn_;
  std::vector<void*> blocks_;
};

struct Outputs {
  std::vector<std::pair<std::string, std::vector<float>>> arrays;
  std::vector<std::pair<std::string, double>> scalars;
  void add(std::string name, std::vector<float> values) { arrays.emplace_back(std::move(name), std::move(values)); }
};

// ---- deterministic inputs --------------------------------------------------------------------

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint32_t bits() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return uint32_t(state_ >> 32);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(bits() >> 8) * (1.0f / 16777216.0f); }
  std::vector<float> floats(int64_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }
  // Token ids below vocab, with runs of repeats (row r repeats row r - 3 every fifth row), so the
  // embedding backward sees repeated tokens.
  std::vector<int32_t> tokens(int64_t n, int64_t vocab) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) v[size_t(r)] = (r >= 3 && r % 5 == 0) ? v[size_t(r - 3)] : int32_t(bits() % uint32_t(vocab));
    return v;
  }

 private:
  uint64_t state_;
};

uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = numerics::f32_to_bf16_rne(v[i]);
  return out;
}
std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = numerics::f32_to_fp16_rne(v[i]);
  return out;
}

std::vector<float> widened_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = numerics::bf16_to_f32(v[i]);
  return out;
}

// The bf16 form of a forward op (ActRef bf16) must store exactly the bits that narrowing its
// fp32 form's output gives on the same backend: what lets a model keep these activations in bf16
// without changing a bit (act_ref.h). Checked here on each backend; the row then compares the
// bf16 outputs across backends (`op` runs the op once into the given ActRef).
Outputs bf16_store_outputs(Arena& a, int64_t count, const std::function<void(ActRef)>& op) {
  float* out32 = a.put(std::vector<float>(size_t(count)));
  uint16_t* out16 = a.put(std::vector<uint16_t>(size_t(count)));
  op(ActRef(out32));
  const std::vector<uint16_t> narrowed = to_bf16(a.get(out32, size_t(count)));
  op(ActRef::bf16(out16));
  const std::vector<uint16_t> stored = a.get_u16(out16, size_t(count));
  int64_t differ = 0;
  for (size_t i = 0; i < stored.size(); ++i) differ += stored[i] != narrowed[i];
  EXPECT_EQ(differ, 0) << "the bf16 output differs from the narrowed fp32 output in " << differ << " of " << count
                       << " elements on " << a.nn().device().name();
  Outputs o;
  o.add("out_bf16", widened_bf16(stored));
  return o;
}

// An op run on a bf16 input and on its widened fp32 copy must give the same bits on one backend
// (the input is widened exactly: act_ref.h); `name`'s values (from the bf16 input) are the row's.
template <class T>
Outputs same_bits_outputs(Arena& a, const T* from16, const T* from32, int64_t count, const std::string& name) {
  std::vector<float> got16, got32;
  if constexpr (std::is_same_v<T, uint16_t>) {
    got16 = widened_bf16(a.get_u16(from16, size_t(count)));
    got32 = widened_bf16(a.get_u16(from32, size_t(count)));
  } else {
    got16 = a.get(from16, size_t(count));
    got32 = a.get(from32, size_t(count));
  }
  int64_t differ = 0;
  for (size_t i = 0; i < got16.size(); ++i) differ += std::memcmp(&got16[i], &got32[i], 4) != 0;
  EXPECT_EQ(differ, 0) << name << " from the bf16 input differs from " << name << " from its widened fp32 copy in "
                       << differ << " of " << count << " elements on " << a.nn().device().name();
  Outputs o;
  o.add(name, std::move(got16));
  return o;
}

// ---- the table -------------------------------------------------------------------------------

struct Case {
  std::string name;  // op_shape, a valid gtest name
  Tol tol;           // how CUDA is compared with the CPU
  std::function<Outputs(Arena&, Rng&)> run;
};

std::vector<Case> g_cases;
void add(std::string name, Tol tol, std::function<Outputs(Arena&, Rng&)> run) {
  g_cases.push_back(Case{std::move(name), tol, std::move(run)});
}

// The norms' backwards with dx, dout and x stored as bf16 (the residual stream's gradient, the
// norm's output's and the residual stream, under bf16 activations): on each backend, dx must be
// the fp32 form's on the widened dx, dout and x, narrowed, and the weight gradients its exactly,
// bit for bit; then the rows compare the backends (dx is a bf16 store of an fp32 reduction).
Outputs norm_backward_bf16_outputs(Arena& a, Rng& rng, int64_t n, int64_t c, int64_t weight_grads, float x_lo,
                                   float x_hi,
                                   const std::function<void(ActRef dx, ActRef dout, ActRef x, float* dweights)>& op) {
  const std::vector<uint16_t> dx_bits = to_bf16(rng.floats(n * c)), dout_bits = to_bf16(rng.floats(n * c));
  const std::vector<uint16_t> x_bits = to_bf16(rng.floats(n * c, x_lo, x_hi));
  const std::vector<float> dweights = rng.floats(weight_grads * c);
  uint16_t *dx16 = a.put(dx_bits), *dout16 = a.put(dout_bits), *x16 = a.put(x_bits);
  float *dx32 = a.put(widened_bf16(dx_bits)), *dout32 = a.put(widened_bf16(dout_bits)), *x32 = a.put(widened_bf16(x_bits));
  float *dw16 = a.put(dweights), *dw32 = a.put(dweights);
  op(ActRef::bf16(dx16), ActRef::bf16(dout16), ActRef::bf16(x16), dw16);
  op(dx32, dout32, x32, dw32);
  const std::vector<uint16_t> stored = a.get_u16(dx16, size_t(n * c)), narrowed = to_bf16(a.get(dx32, size_t(n * c)));
  int64_t differ = 0;
  for (size_t i = 0; i < stored.size(); ++i) differ += stored[i] != narrowed[i];
  EXPECT_EQ(differ, 0) << "the bf16 dx differs from the fp32 form's, narrowed, in " << differ << " of " << n * c
                       << " elements on " << a.nn().device().name();
  Outputs o = same_bits_outputs(a, dw16, dw32, weight_grads * c, "dweights");
  o.add("dx_bf16", widened_bf16(stored));
  return o;
}

void add_norm_backward_bf16_cases(const std::string& label, int64_t n, int64_t c) {
  add("rmsnorm_backward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    const float* rstd = a.put(rng.floats(n, 0.6f, 1.2f));
    return norm_backward_bf16_outputs(a, rng, n, c, 1, -2.0f, 2.0f, [&](ActRef dx, ActRef dout, ActRef x, float* dw) {
      a.nn().rmsnorm_backward(dx, dw, dout, x, w, rstd, n, c);
    });
  });
  add("layernorm_backward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    const float* mean = a.put(rng.floats(n, 0.4f, 0.6f));
    const float* rstd = a.put(rng.floats(n, 0.6f, 0.8f));
    return norm_backward_bf16_outputs(a, rng, n, c, 2, -2.0f, 3.0f, [&](ActRef dx, ActRef dout, ActRef x, float* dwb) {
      a.nn().layernorm_backward(dx, dwb, dwb + c, dout, x, w, mean, rstd, n, c);
    });
  });
}

// The q/k norms (HeadNormShape): rows of [q: hq heads | k: hk heads | v: hk heads] of d each.
// The bf16 forms, on each backend, are the fp32 forms' on the widened arrays, narrowed (the
// weight gradients bit for bit); the rows then compare the backends.
void add_head_norm_cases(const std::string& label, int64_t rows, int64_t hq, int64_t hk, int64_t d) {
  const HeadNormShape s{rows, hq, hk, d, (hq + 2 * hk) * d};
  const int64_t n = rows * s.stride, stats = rows * s.normed_heads();
  add("head_rmsnorm_forward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n, -2.0f, 2.0f));
    const float* wq = a.put(rng.floats(d, 0.5f, 1.5f));
    const float* wk = a.put(rng.floats(d, 0.5f, 1.5f));
    float* out = a.put(std::vector<float>(size_t(n)));
    float* rstd = a.put(std::vector<float>(size_t(stats)));
    a.nn().head_rmsnorm_forward(s, out, rstd, x, wq, wk, 1e-6f);
    Outputs o;
    o.add("out", a.get(out, size_t(n)));
    o.add("rstd", a.get(rstd, size_t(stats)));
    return o;
  });
  add("head_rmsnorm_forward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(n, -2.0f, 2.0f));
    uint16_t* x16 = a.put(x_bits);
    float* x32 = a.put(widened_bf16(x_bits));
    const float* wq = a.put(rng.floats(d, 0.5f, 1.5f));
    const float* wk = a.put(rng.floats(d, 0.5f, 1.5f));
    float *rstd16 = a.put(std::vector<float>(size_t(stats))), *rstd32 = a.put(std::vector<float>(size_t(stats)));
    Outputs o = bf16_store_outputs(a, n, [&](ActRef out) {
      if (out.is_bf16()) a.nn().head_rmsnorm_forward(s, out, rstd16, ActRef::bf16(x16), wq, wk, 1e-6f);
      else a.nn().head_rmsnorm_forward(s, out, rstd32, x32, wq, wk, 1e-6f);
    });
    Outputs r = same_bits_outputs(a, rstd16, rstd32, stats, "rstd");
    o.add("rstd", std::move(r.arrays.front().second));
    return o;
  });
  // rstd consistent with x, as the forward leaves it, so dx is the true gradient.
  auto rstds_of = [=](const std::vector<float>& xs) {
    std::vector<float> out(static_cast<size_t>(stats));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < s.normed_heads(); ++h) {
        double ss = 0;
        for (int64_t i = 0; i < d; ++i) ss += double(xs[size_t(r * s.stride + h * d + i)]) * xs[size_t(r * s.stride + h * d + i)];
        out[size_t(r * s.normed_heads() + h)] = float(1.0 / std::sqrt(ss / double(d) + 1e-6));
      }
    }
    return out;
  };
  add("head_rmsnorm_backward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    const auto xs = rng.floats(n, -2.0f, 2.0f);
    float* x = a.put(xs);
    const float* rstd = a.put(rstds_of(xs));
    const float* wq = a.put(rng.floats(d, 0.5f, 1.5f));
    const float* wk = a.put(rng.floats(d, 0.5f, 1.5f));
    float* dd = a.put(rng.floats(n));  // overwritten in place (v heads kept)
    float* dw = a.put(rng.floats(2 * d));  // accumulated into
    a.nn().head_rmsnorm_backward(s, dd, dw, dw + d, x, wq, wk, rstd);
    Outputs o;
    o.add("d", a.get(dd, size_t(n)));
    o.add("dw", a.get(dw, size_t(2 * d)));
    return o;
  });
  add("head_rmsnorm_backward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(n, -2.0f, 2.0f)), d_bits = to_bf16(rng.floats(n));
    const float* rstd = a.put(rstds_of(widened_bf16(x_bits)));
    const float* wq = a.put(rng.floats(d, 0.5f, 1.5f));
    const float* wk = a.put(rng.floats(d, 0.5f, 1.5f));
    const std::vector<float> dw0 = rng.floats(2 * d);
    uint16_t *x16 = a.put(x_bits), *d16 = a.put(d_bits);
    float *x32 = a.put(widened_bf16(x_bits)), *d32 = a.put(widened_bf16(d_bits));
    float *dw16 = a.put(dw0), *dw32 = a.put(dw0);
    a.nn().head_rmsnorm_backward(s, ActRef::bf16(d16), dw16, dw16 + d, ActRef::bf16(x16), wq, wk, rstd);
    a.nn().head_rmsnorm_backward(s, d32, dw32, dw32 + d, x32, wq, wk, rstd);
    const std::vector<uint16_t> stored = a.get_u16(d16, size_t(n)), narrowed = to_bf16(a.get(d32, size_t(n)));
    int64_t differ = 0;
    for (size_t i = 0; i < stored.size(); ++i) differ += stored[i] != narrowed[i];
    EXPECT_EQ(differ, 0) << "the bf16 d differs from the fp32 form's, narrowed, in " << differ << " of " << n
                         << " elements on " << a.nn().device().name();
    Outputs o = same_bits_outputs(a, dw16, dw32, 2 * d, "dw");
    o.add("d_bf16", widened_bf16(stored));
    return o;
  });
}

// RMSNorm's backward (one kernel on a GPU, norm_cuda.cu): dx accumulated into, dw added to in
// column-sum chunks of 64 rows; c beyond 12,031 keeps the chunk sums in global memory.
void add_rmsnorm_backward_case(const std::string& label, int64_t n, int64_t c) {
  add("rmsnorm_backward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    const auto xs = rng.floats(n * c, -2.0f, 2.0f);
    std::vector<float> rstds(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < c; ++i) ss += double(xs[size_t(r * c + i)]) * xs[size_t(r * c + i)];
      rstds[size_t(r)] = float(1.0 / std::sqrt(ss / double(c) + 1e-5));
    }
    float* x = a.put(xs);
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    float* dout = a.put(rng.floats(n * c));
    const float* rstd = a.put(rstds);
    float* dx = a.put(rng.floats(n * c));  // accumulated into
    float* dw = a.put(rng.floats(c));
    a.nn().rmsnorm_backward(dx, dw, dout, x, w, rstd, n, c);
    Outputs o;
    o.add("dx", a.get(dx, size_t(n * c)));
    o.add("dw", a.get(dw, size_t(c)));
    return o;
  });
}

void add_norm_cases(const std::string& label, int64_t n, int64_t c) {
  add("rmsnorm_forward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n * c, -2.0f, 2.0f));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    float* out = a.put(std::vector<float>(size_t(n * c)));
    float* rstd = a.put(std::vector<float>(size_t(n)));
    a.nn().rmsnorm_forward(out, rstd, x, w, n, c, 1e-5f);
    Outputs o;
    o.add("out", a.get(out, size_t(n * c)));
    o.add("rstd", a.get(rstd, size_t(n)));
    return o;
  });
  add("rmsnorm_forward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n * c, -2.0f, 2.0f));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    float* rstd = a.put(std::vector<float>(size_t(n)));
    return bf16_store_outputs(a, n * c, [&](ActRef out) { a.nn().rmsnorm_forward(out, rstd, x, w, n, c, 1e-5f); });
  });
  // From a bf16 x (the residual stream under bf16 activations): on each backend the fp32 form's
  // output on the widened x, narrowed, and its statistics, bit for bit.
  add("rmsnorm_forward_bf16x_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(n * c, -2.0f, 2.0f));
    uint16_t* x16 = a.put(x_bits);
    float* x32 = a.put(widened_bf16(x_bits));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    float *rstd16 = a.put(std::vector<float>(size_t(n))), *rstd32 = a.put(std::vector<float>(size_t(n)));
    Outputs o = bf16_store_outputs(a, n * c, [&](ActRef out) {
      if (out.is_bf16()) a.nn().rmsnorm_forward(out, rstd16, ActRef::bf16(x16), w, n, c, 1e-5f);
      else a.nn().rmsnorm_forward(out, rstd32, x32, w, n, c, 1e-5f);
    });
    Outputs r = same_bits_outputs(a, rstd16, rstd32, n, "rstd");
    o.add("rstd", std::move(r.arrays.front().second));
    return o;
  });
  add_rmsnorm_backward_case(label, n, c);
  add("layernorm_forward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n * c, -2.0f, 3.0f));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    const float* b = a.put(rng.floats(c));
    float* out = a.put(std::vector<float>(size_t(n * c)));
    float* mean = a.put(std::vector<float>(size_t(n)));
    float* rstd = a.put(std::vector<float>(size_t(n)));
    a.nn().layernorm_forward(out, mean, rstd, x, w, b, n, c, 1e-5f);
    Outputs o;
    o.add("out", a.get(out, size_t(n * c)));
    o.add("mean", a.get(mean, size_t(n)));
    o.add("rstd", a.get(rstd, size_t(n)));
    return o;
  });
  add("layernorm_forward_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n * c, -2.0f, 3.0f));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    const float* b = a.put(rng.floats(c));
    float* mean = a.put(std::vector<float>(size_t(n)));
    float* rstd = a.put(std::vector<float>(size_t(n)));
    return bf16_store_outputs(
        a, n * c, [&](ActRef out) { a.nn().layernorm_forward(out, mean, rstd, x, w, b, n, c, 1e-5f); });
  });
  add("layernorm_forward_bf16x_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(n * c, -2.0f, 3.0f));
    uint16_t* x16 = a.put(x_bits);
    float* x32 = a.put(widened_bf16(x_bits));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    const float* b = a.put(rng.floats(c));
    float *mean16 = a.put(std::vector<float>(size_t(2 * n))), *mean32 = a.put(std::vector<float>(size_t(2 * n)));
    Outputs o = bf16_store_outputs(a, n * c, [&](ActRef out) {
      if (out.is_bf16()) a.nn().layernorm_forward(out, mean16, mean16 + n, ActRef::bf16(x16), w, b, n, c, 1e-5f);
      else a.nn().layernorm_forward(out, mean32, mean32 + n, x32, w, b, n, c, 1e-5f);
    });
    Outputs r = same_bits_outputs(a, mean16, mean32, 2 * n, "mean_rstd");
    o.add("mean_rstd", std::move(r.arrays.front().second));
    return o;
  });
  add("layernorm_backward_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    float* x = a.put(rng.floats(n * c, -2.0f, 3.0f));
    const float* w = a.put(rng.floats(c, 0.5f, 1.5f));
    float* dout = a.put(rng.floats(n * c));
    const float* mean = a.put(rng.floats(n, 0.4f, 0.6f));
    const float* rstd = a.put(rng.floats(n, 0.6f, 0.8f));
    float* dx = a.put(rng.floats(n * c));
    float* dw = a.put(rng.floats(c));
    float* db = a.put(rng.floats(c));
    a.nn().layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c);
    Outputs o;
    o.add("dx", a.get(dx, size_t(n * c)));
    o.add("dw", a.get(dw, size_t(c)));
    o.add("db", a.get(db, size_t(c)));
    return o;
  });
  add_norm_backward_bf16_cases(label, n, c);
}

// Llama 3's angles (theta 500000) for positions 0..seq-1: (seq, head_dim / 2) each.
struct RopeTables {
  std::vector<float> cos, sin;
};
RopeTables rope_tables(int64_t seq, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  RopeTables t{std::vector<float>(size_t(seq * half)), std::vector<float>(size_t(seq * half))};
  for (int64_t p = 0; p < seq; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * std::pow(500000.0, -double(2 * i) / double(head_dim));
      t.cos[size_t(p * half + i)] = float(std::cos(angle));
      t.sin[size_t(p * half + i)] = float(std::sin(angle));
    }
  }
  return t;
}

void add_rope_case(const std::string& label, int64_t rows, int64_t seq, int64_t heads, int64_t head_dim,
                   int64_t stride) {
  for (bool inverse : {false, true}) {
    add(std::string(inverse ? "rope_inverse_" : "rope_forward_") + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
      const RopeTables t = rope_tables(seq, head_dim);
      float* x = a.put(rng.floats(rows * stride));
      a.nn().rope_apply(x, rows, seq, heads, head_dim, stride, a.put(t.cos), a.put(t.sin), inverse);
      Outputs o;
      o.add("x", a.get(x, size_t(rows * stride)));
      return o;
    });
    // bf16 rows (qkv as its bf16 GEMM stores it): each pair widened, rotated in fp32, rounded
    // once; on each backend bitwise the fp32 rotation of the widened rows, narrowed.
    add(std::string(inverse ? "rope_inverse_bf16_" : "rope_forward_bf16_") + label, Tol::kBitwise,
        [=](Arena& a, Rng& rng) {
          const RopeTables t = rope_tables(seq, head_dim);
          const float *c = a.put(t.cos), *sv = a.put(t.sin);
          const std::vector<uint16_t> bits = to_bf16(rng.floats(rows * stride));
          uint16_t* x16 = a.put(bits);
          float* x32 = a.put(widened_bf16(bits));
          a.nn().rope_apply(ActRef::bf16(x16), rows, seq, heads, head_dim, stride, c, sv, inverse);
          a.nn().rope_apply(x32, rows, seq, heads, head_dim, stride, c, sv, inverse);
          const std::vector<uint16_t> stored = a.get_u16(x16, size_t(rows * stride));
          const std::vector<uint16_t> narrowed = to_bf16(a.get(x32, size_t(rows * stride)));
          int64_t differ = 0;
          for (size_t i = 0; i < stored.size(); ++i) differ += stored[i] != narrowed[i];
          EXPECT_EQ(differ, 0) << "bf16 RoPE differs from the narrowed fp32 rotation in " << differ << " elements on "
                               << a.nn().device().name();
          Outputs o;
          o.add("x_bf16", widened_bf16(stored));
          return o;
        });
  }
}

void add_activation_cases(const std::string& label, int64_t n, int64_t h) {
  add("swiglu_forward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    float* act = a.put(std::vector<float>(size_t(n * h)));
    a.nn().swiglu_forward(act, gu, n, h);
    Outputs o;
    o.add("act", a.get(act, size_t(n * h)));
    return o;
  });
  add("swiglu_forward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    return bf16_store_outputs(a, n * h, [&](ActRef act) { a.nn().swiglu_forward(act, gu, n, h); });
  });
  add("swiglu_backward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    float* dact = a.put(rng.floats(n * h));
    float* dgu = a.put(std::vector<float>(size_t(n * 2 * h)));
    a.nn().swiglu_backward(dgu, dact, gu, n, h);
    Outputs o;
    o.add("dgu", a.get(dgu, size_t(n * 2 * h)));
    return o;
  });
  add("gelu_forward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    float* x = a.put(rng.floats(count, -8.0f, 8.0f));
    float* out = a.put(std::vector<float>(size_t(count)));
    a.nn().gelu_forward(out, x, count);
    Outputs o;
    o.add("out", a.get(out, size_t(count)));
    return o;
  });
  add("gelu_forward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    float* x = a.put(rng.floats(count, -8.0f, 8.0f));
    return bf16_store_outputs(a, count, [&](ActRef out) { a.nn().gelu_forward(out, x, count); });
  });
  add("gelu_backward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    float* x = a.put(rng.floats(count, -8.0f, 8.0f));
    float* dout = a.put(rng.floats(count));
    float* dx = a.put(std::vector<float>(size_t(count)));
    a.nn().gelu_backward(dx, dout, x, count);
    Outputs o;
    o.add("dx", a.get(dx, size_t(count)));
    return o;
  });
  // A bf16 input (the MLP's in-projection as a bf16 GEMM stores it) is widened exactly: on each
  // backend the op gives the bits it gives the widened fp32 input, and the rows then compare the
  // backends.
  add("swiglu_forward_bf16in_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> gu_bits = to_bf16(rng.floats(n * 2 * h, -6.0f, 6.0f));
    uint16_t* gu16 = a.put(gu_bits);
    float* gu32 = a.put(widened_bf16(gu_bits));
    uint16_t* from16 = a.put(std::vector<uint16_t>(size_t(n * h)));
    uint16_t* from32 = a.put(std::vector<uint16_t>(size_t(n * h)));
    a.nn().swiglu_forward(ActRef::bf16(from16), ActRef::bf16(gu16), n, h);
    a.nn().swiglu_forward(ActRef::bf16(from32), gu32, n, h);
    return same_bits_outputs(a, from16, from32, n * h, "act");
  });
  add("gelu_forward_bf16in_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(count, -8.0f, 8.0f));
    uint16_t* x16 = a.put(x_bits);
    float* x32 = a.put(widened_bf16(x_bits));
    uint16_t* from16 = a.put(std::vector<uint16_t>(size_t(count)));
    uint16_t* from32 = a.put(std::vector<uint16_t>(size_t(count)));
    a.nn().gelu_forward(ActRef::bf16(from16), ActRef::bf16(x16), count);
    a.nn().gelu_forward(ActRef::bf16(from32), x32, count);
    return same_bits_outputs(a, from16, from32, count, "out");
  });
  // Under bf16 activations the backwards read and write bf16 throughout: on each backend the op
  // gives the bits of its fp32 form on the widened inputs, each output narrowed once; the rows
  // then compare the backends.
  add("swiglu_backward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> gu_bits = to_bf16(rng.floats(n * 2 * h, -6.0f, 6.0f));
    const std::vector<uint16_t> dact_bits = to_bf16(rng.floats(n * h));
    uint16_t *gu16 = a.put(gu_bits), *dact16 = a.put(dact_bits);
    float *gu32 = a.put(widened_bf16(gu_bits)), *dact32 = a.put(widened_bf16(dact_bits));
    return bf16_store_outputs(a, n * 2 * h, [&](ActRef dgu) {
      if (dgu.is_bf16()) return a.nn().swiglu_backward(dgu, ActRef::bf16(dact16), ActRef::bf16(gu16), n, h);
      a.nn().swiglu_backward(dgu, dact32, gu32, n, h);
    });
  });
  add("gelu_backward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    const std::vector<uint16_t> x_bits = to_bf16(rng.floats(count, -8.0f, 8.0f));
    const std::vector<uint16_t> dout_bits = to_bf16(rng.floats(count));
    uint16_t *x16 = a.put(x_bits), *dout16 = a.put(dout_bits);
    float *x32 = a.put(widened_bf16(x_bits)), *dout32 = a.put(widened_bf16(dout_bits));
    return bf16_store_outputs(a, count, [&](ActRef dx) {
      if (dx.is_bf16()) return a.nn().gelu_backward(dx, ActRef::bf16(dout16), ActRef::bf16(x16), count);
      a.nn().gelu_backward(dx, dout32, x32, count);
    });
  });
}

// Gemma 3's GeGLU and scale_add (the embedding's sqrt(dim) and the residual add after a post-norm).
void add_gemma_elementwise_cases(const std::string& label, int64_t n, int64_t h) {
  add("geglu_forward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    float* act = a.put(std::vector<float>(size_t(n * h)));
    a.nn().geglu_forward(act, gu, n, h);
    Outputs o;
    o.add("act", a.get(act, size_t(n * h)));
    return o;
  });
  add("geglu_forward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    return bf16_store_outputs(a, n * h, [&](ActRef act) { a.nn().geglu_forward(act, gu, n, h); });
  });
  add("geglu_forward_bf16in_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> gu_bits = to_bf16(rng.floats(n * 2 * h, -6.0f, 6.0f));
    uint16_t* gu16 = a.put(gu_bits);
    float* gu32 = a.put(widened_bf16(gu_bits));
    uint16_t* from16 = a.put(std::vector<uint16_t>(size_t(n * h)));
    uint16_t* from32 = a.put(std::vector<uint16_t>(size_t(n * h)));
    a.nn().geglu_forward(ActRef::bf16(from16), ActRef::bf16(gu16), n, h);
    a.nn().geglu_forward(ActRef::bf16(from32), gu32, n, h);
    return same_bits_outputs(a, from16, from32, n * h, "act");
  });
  add("geglu_backward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* gu = a.put(rng.floats(n * 2 * h, -6.0f, 6.0f));
    float* dact = a.put(rng.floats(n * h));
    float* dgu = a.put(std::vector<float>(size_t(n * 2 * h)));
    a.nn().geglu_backward(dgu, dact, gu, n, h);
    Outputs o;
    o.add("dgu", a.get(dgu, size_t(n * 2 * h)));
    return o;
  });
  add("geglu_backward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> gu_bits = to_bf16(rng.floats(n * 2 * h, -6.0f, 6.0f));
    const std::vector<uint16_t> dact_bits = to_bf16(rng.floats(n * h));
    uint16_t *gu16 = a.put(gu_bits), *dact16 = a.put(dact_bits);
    float *gu32 = a.put(widened_bf16(gu_bits)), *dact32 = a.put(widened_bf16(dact_bits));
    return bf16_store_outputs(a, n * 2 * h, [&](ActRef dgu) {
      if (dgu.is_bf16()) return a.nn().geglu_backward(dgu, ActRef::bf16(dact16), ActRef::bf16(gu16), n, h);
      a.nn().geglu_backward(dgu, dact32, gu32, n, h);
    });
  });
  // out = x * s + add, in place as the model calls it (the embedding: no add, s = sqrt(dim) as a
  // bf16 value; the residual: s = 1), fp32 and bf16.
  add("scale_add_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    float* x = a.put(rng.floats(count, -8.0f, 8.0f));
    float* y = a.put(rng.floats(count, -8.0f, 8.0f));
    float* scaled = a.put(rng.floats(count, -8.0f, 8.0f));
    a.nn().scale_add(y, y, 1.0f, x, count);
    a.nn().scale_add(scaled, scaled, 33.941125f, ActRef(), count);
    Outputs o;
    o.add("residual", a.get(y, size_t(count)));
    o.add("scaled", a.get(scaled, size_t(count)));
    return o;
  });
  add("scale_add_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t count = n * h + 3;
    uint16_t* x = a.put(to_bf16(rng.floats(count, -8.0f, 8.0f)));
    uint16_t* y = a.put(to_bf16(rng.floats(count, -8.0f, 8.0f)));
    uint16_t* scaled = a.put(to_bf16(rng.floats(count, -8.0f, 8.0f)));
    a.nn().scale_add(ActRef::bf16(y), ActRef::bf16(y), 1.0f, ActRef::bf16(x), count);
    a.nn().scale_add(ActRef::bf16(scaled), ActRef::bf16(scaled), 34.0f, ActRef(), count);
    Outputs o;
    o.add("residual", widened_bf16(a.get_u16(y, size_t(count))));
    o.add("scaled", widened_bf16(a.get_u16(scaled, size_t(count))));
    return o;
  });
}

void add_embedding_cases(const std::string& label, int64_t vocab, int64_t n, int64_t seq, int64_t c, bool with_wpe) {
  add("embedding_forward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    const float* wte = a.put(rng.floats(vocab * c));
    const float* wpe = with_wpe ? a.put(rng.floats(seq * c)) : nullptr;
    float* out = a.put(std::vector<float>(size_t(n * c)));
    a.nn().embedding_forward(out, tok, wte, wpe, n, seq, c);
    Outputs o;
    o.add("out", a.get(out, size_t(n * c)));
    return o;
  });
  add("embedding_forward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    const uint16_t* wte = a.put(to_bf16(rng.floats(vocab * c)));
    const uint16_t* wpe = with_wpe ? a.put(to_bf16(rng.floats(seq * c))) : nullptr;
    float* out = a.put(std::vector<float>(size_t(n * c)));
    a.nn().embedding_forward_bf16(out, tok, wte, wpe, n, seq, c);
    Outputs o;
    o.add("out", a.get(out, size_t(n * c)));
    return o;
  });
  // Into a bf16 out (the residual stream under bf16 activations), from fp32 and from bf16 tables:
  // on each backend the fp32 lookup's sums, narrowed.
  add("embedding_forward_bf16out_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    const float* wte = a.put(rng.floats(vocab * c));
    const float* wpe = with_wpe ? a.put(rng.floats(seq * c)) : nullptr;
    return bf16_store_outputs(a, n * c, [&](ActRef out) { a.nn().embedding_forward(out, tok, wte, wpe, n, seq, c); });
  });
  add("embedding_forward_bf16_bf16out_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    const uint16_t* wte = a.put(to_bf16(rng.floats(vocab * c)));
    const uint16_t* wpe = with_wpe ? a.put(to_bf16(rng.floats(seq * c))) : nullptr;
    return bf16_store_outputs(a, n * c,
                              [&](ActRef out) { a.nn().embedding_forward_bf16(out, tok, wte, wpe, n, seq, c); });
  });
  // Row order per token on both sides (embedding_cuda.h), so the gradients are bitwise.
  add("embedding_backward_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    float* dout = a.put(rng.floats(n * c));
    float* dwte = a.put(rng.floats(vocab * c));
    float* dwpe = with_wpe ? a.put(rng.floats(seq * c)) : nullptr;
    a.nn().embedding_backward(dwte, dwpe, dout, tok, n, seq, c);
    Outputs o;
    o.add("dwte", a.get(dwte, size_t(vocab * c)));
    if (with_wpe) o.add("dwpe", a.get(dwpe, size_t(seq * c)));
    return o;
  });
  // From a bf16 dout (the residual stream's gradient under bf16 activations): on each backend the
  // bits of the sums over its widened copy.
  add("embedding_backward_bf16_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int32_t* tok = a.put(rng.tokens(n, vocab));
    const std::vector<uint16_t> dout_bits = to_bf16(rng.floats(n * c));
    uint16_t* dout16 = a.put(dout_bits);
    float* dout32 = a.put(widened_bf16(dout_bits));
    const int64_t table = vocab * c + (with_wpe ? seq * c : 0);
    const std::vector<float> start = rng.floats(table);
    float *from16 = a.put(start), *from32 = a.put(start);
    a.nn().embedding_backward(from16, with_wpe ? from16 + vocab * c : nullptr, ActRef::bf16(dout16), tok, n, seq, c);
    a.nn().embedding_backward(from32, with_wpe ? from32 + vocab * c : nullptr, dout32, tok, n, seq, c);
    return same_bits_outputs(a, from16, from32, table, "dwte_dwpe");
  });
}

// The bias gradient of a gradient stored as bf16 (the MLP's in-projection's, under bf16
// activations) sums its widened values: the bits of the fp32 sum over the widened copy.
void add_bias_backward_bf16_case(const std::string& label, int64_t n, int64_t c, int64_t stride) {
  add("bias_backward_bf16_" + label, n <= 64 ? Tol::kBitwise : Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> dout_bits = to_bf16(rng.floats(n * stride));
    uint16_t* dout16 = a.put(dout_bits);
    float* dout32 = a.put(widened_bf16(dout_bits));
    const std::vector<float> start = rng.floats(c);
    float *from16 = a.put(start), *from32 = a.put(start);
    a.nn().bias_backward(from16, ActRef::bf16(dout16), n, c, stride);
    a.nn().bias_backward(from32, dout32, n, c, stride);
    return same_bits_outputs(a, from16, from32, c, "dbias");
  });
}

void add_bias_cases(const std::string& label, int64_t n, int64_t c, int64_t stride) {
  add("bias_add_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    float* out = a.put(rng.floats(n * stride));
    a.nn().bias_add(out, a.put(rng.floats(c)), n, c, stride);
    Outputs o;
    o.add("out", a.get(out, size_t(n * stride)));
    return o;
  });
  // One chunk of rows (n <= 64) sums in the CPU's row order: bitwise; more rows: fp32 reduction.
  add("bias_backward_" + label, n <= 64 ? Tol::kBitwise : Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    float* dout = a.put(rng.floats(n * stride));
    float* dbias = a.put(rng.floats(c));
    a.nn().bias_backward(dbias, dout, n, c, stride);
    Outputs o;
    o.add("dbias", a.get(dbias, size_t(c)));
    return o;
  });
  add_bias_backward_bf16_case(label, n, c, stride);
}

// Rows of logits `stride` apart (stride > vocab: the model's padded rows, models::logits_row_stride).
// The pad columns hold NaN going in: the op must neither read them (a NaN would reach the loss and
// every gradient of its row) nor write them (each must still be the same NaN coming out). On each
// backend the padded rows must give the dense rows' bits (the same op at stride = vocab), so a
// read of the pads fails even where both sides of a comparison would read them alike.
template <class T>
std::vector<T> with_pads(const std::vector<T>& dense, int64_t rows, int64_t vocab, int64_t stride, T pad) {
  std::vector<T> v(size_t(rows * stride), pad);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(dense.begin() + r * vocab, vocab, v.begin() + r * stride);
  return v;
}
template <class T>
std::vector<T> without_pads(const std::vector<T>& padded, int64_t rows, int64_t vocab, int64_t stride, T pad,
                            const std::string& where) {
  std::vector<T> v(size_t(rows * vocab));
  int64_t pads_changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(padded.begin() + r * stride, vocab, v.begin() + r * vocab);
    for (int64_t i = vocab; i < stride; ++i) pads_changed += std::memcmp(&padded[size_t(r * stride + i)], &pad, sizeof(T)) != 0;
  }
  EXPECT_EQ(pads_changed, 0) << "cross_entropy_rows wrote " << pads_changed << " pad columns on " << where;
  return v;
}
constexpr uint32_t kPadNanBits = 0x7fc0dead;
constexpr uint16_t kPadNanBf16 = 0x7fd5;
float pad_nan() {
  float f;
  std::memcpy(&f, &kPadNanBits, 4);
  return f;
}

void add_cross_entropy_case(const std::string& label, int64_t rows, int64_t vocab, bool want_grad,
                            int64_t stride = 0) {
  const int64_t ld = stride > 0 ? stride : vocab;
  add("cross_entropy_" + label, Tol::kF32Reduction, [=](Arena& a, Rng& rng) {
    std::vector<int32_t> targets = rng.tokens(rows, vocab);
    if (rows > 2) targets[1] = -1;  // an ignored row
    const std::vector<float> values = rng.floats(rows * vocab, -8.0f, 8.0f);
    float* logits = a.put(with_pads(values, rows, vocab, ld, pad_nan()));
    // The op adds to the sum it is given: start it at 0.5, which both sides must keep.
    double* loss_sum = a.put(std::vector<double>{0.5});
    a.nn().cross_entropy_rows(logits, a.put(targets), rows, vocab, ld, 0.25f, want_grad, loss_sum);
    Outputs o;
    o.add("logits", without_pads(a.get(logits, size_t(rows * ld)), rows, vocab, ld, pad_nan(), a.nn().device().name()));
    o.scalars.emplace_back("loss", a.get_f64(loss_sum));
    if (ld > vocab) {
      float* dense = a.put(values);
      double* dense_sum = a.put(std::vector<double>{0.5});
      a.nn().cross_entropy_rows(dense, a.put(targets), rows, vocab, vocab, 0.25f, want_grad, dense_sum);
      const std::vector<float> want = a.get(dense, size_t(rows * vocab));
      const double want_loss = a.get_f64(dense_sum);
      EXPECT_EQ(std::memcmp(o.arrays[0].second.data(), want.data(), want.size() * 4), 0)
          << "padded rows' gradients differ from the dense rows' on " << a.nn().device().name();
      EXPECT_EQ(std::memcmp(&o.scalars[0].second, &want_loss, sizeof(double)), 0)
          << o.scalars[0].second << " vs the dense rows' " << want_loss;
    }
    return o;
  });
  // bf16 logits (a bf16 GEMM's output under bf16 activations), with and without the gradient:
  // on each backend the fp32 form's loss on the widened logits and its gradient narrowed, bit
  // for bit; across backends a bf16 store of an fp32 reduction.
  add("cross_entropy_bf16_" + label, Tol::kBf16Store, [=](Arena& a, Rng& rng) {
    std::vector<int32_t> targets = rng.tokens(rows, vocab);
    if (rows > 2) targets[1] = -1;
    const std::vector<uint16_t> bits = to_bf16(rng.floats(rows * vocab, -8.0f, 8.0f));
    const int32_t* t = a.put(targets);
    uint16_t* logits16 = a.put(with_pads(bits, rows, vocab, ld, kPadNanBf16));
    float* logits32 = a.put(with_pads(widened_bf16(bits), rows, vocab, ld, pad_nan()));
    double *sum16 = a.put(std::vector<double>{0.5}), *sum32 = a.put(std::vector<double>{0.5});
    a.nn().cross_entropy_rows(ActRef::bf16(logits16), t, rows, vocab, ld, 0.25f, want_grad, sum16);
    a.nn().cross_entropy_rows(logits32, t, rows, vocab, ld, 0.25f, want_grad, sum32);
    const std::string where = a.nn().device().name();
    const std::vector<uint16_t> got =
        without_pads(a.get_u16(logits16, size_t(rows * ld)), rows, vocab, ld, kPadNanBf16, where);
    const std::vector<uint16_t> narrowed =
        to_bf16(without_pads(a.get(logits32, size_t(rows * ld)), rows, vocab, ld, pad_nan(), where));
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != narrowed[i];
    EXPECT_EQ(differ, 0) << "the bf16 row differs from the fp32 form's, narrowed, in " << differ << " elements on "
                         << where;
    const double loss16 = a.get_f64(sum16), loss32 = a.get_f64(sum32);
    EXPECT_EQ(std::memcmp(&loss16, &loss32, sizeof(double)), 0) << loss16 << " vs " << loss32;
    if (ld > vocab) {
      uint16_t* dense = a.put(bits);
      double* dense_sum = a.put(std::vector<double>{0.5});
      a.nn().cross_entropy_rows(ActRef::bf16(dense), t, rows, vocab, vocab, 0.25f, want_grad, dense_sum);
      const double want_loss = a.get_f64(dense_sum);
      EXPECT_EQ(a.get_u16(dense, size_t(rows * vocab)), got) << "padded bf16 rows differ from the dense rows' on "
                                                             << where;
      EXPECT_EQ(std::memcmp(&loss16, &want_loss, sizeof(double)), 0) << loss16 << " vs the dense rows' " << want_loss;
    }
    Outputs o;
    o.add("logits_bf16", widened_bf16(got));
    o.scalars.emplace_back("loss", loss16);
    return o;
  });
}

// dtype kBF16: the model's bf16 compute (rows named attention_*_bf16_*, class bf16 attention).
// window > 0: sliding-window attention (AttentionShape::window). score_scalar > 0: scores scaled by
// its inverse square root instead of head_dim's (Gemma 3's query_pre_attn_scalar).
void add_attention_cases(const std::string& label, int64_t batch, int64_t seq, int64_t hq, int64_t hkv, int64_t d,
                         GemmDtype dtype = GemmDtype::kF32, int64_t window = 0, int64_t score_scalar = 0) {
  AttentionShape s{batch, seq, hq, hkv, d, dtype, window};
  s.score_scalar = score_scalar;
  const int64_t rows = batch * seq, stride = s.qkv_stride();
  const bool bf16 = dtype == GemmDtype::kBF16;
  const std::string kind = bf16 ? "bf16_" : "";
  const Tol tol = bf16 ? Tol::kBf16Attention : Tol::kAttention;
  add("attention_forward_" + kind + label, tol, [=](Arena& a, Rng& rng) {
    float* qkv = a.put(rng.floats(rows * stride, -1.5f, 1.5f));
    float* out = a.put(std::vector<float>(size_t(rows * hq * d)));
    float* lse = a.put(std::vector<float>(size_t(batch * hq * seq)));
    a.nn().attention_forward(s, out, lse, qkv);
    Outputs o;
    o.add("out", a.get(out, size_t(rows * hq * d)));
    o.add("lse", a.get(lse, size_t(batch * hq * seq)));
    return o;
  });
  add("attention_backward_" + kind + label, tol, [=](Arena& a, Rng& rng) {
    // out and lse from the CPU forward on the host, the same inputs for both sides.
    auto qkv_host = rng.floats(rows * stride, -1.5f, 1.5f);
    std::vector<float> out_host(size_t(rows * hq * d)), lse_host(size_t(batch * hq * seq));
    backend_for(Device::cpu()).nn().attention_forward(s, out_host.data(), lse_host.data(), qkv_host.data());
    float* qkv = a.put(qkv_host);
    float* out = a.put(out_host);  // read only
    const float* lse = a.put(lse_host);
    float* dout = a.put(rng.floats(rows * hq * d));
    float* dqkv = a.put(rng.floats(rows * stride));  // overwritten
    float* scratch = a.put(std::vector<float>(size_t(2 * batch * hq * seq * d)));
    a.nn().attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
    Outputs o;
    o.add("dqkv", a.get(dqkv, size_t(rows * stride)));
    return o;
  });
}

// Documents packed into each sequence (AttentionShape::doc_start, in the arena's memory): starts
// at 0, 7 + 3b and 2T/3 of sequence b (those below T), so boundaries fall inside and across the
// kernels' query and key tiles, at different rows in each sequence.
std::vector<int32_t> document_starts(int64_t batch, int64_t seq) {
  std::vector<int32_t> starts(size_t(batch * seq));
  for (int64_t b = 0; b < batch; ++b) {
    int32_t start = 0;
    for (int64_t t = 0; t < seq; ++t) {
      if (t == 7 + 3 * b || t == 2 * seq / 3) start = int32_t(t);
      starts[size_t(b * seq + t)] = start;
    }
  }
  return starts;
}

// The documents those starts make and the rows of the longest (AttentionShape::documents and
// longest_document), as Transformer::set_document_starts counts them.
void count_documents(const std::vector<int32_t>& starts, int64_t seq, AttentionShape& s) {
  for (size_t r = 0; r < starts.size(); ++r) {
    const int64_t t = int64_t(r) % seq;
    s.documents += starts[r] == t;
    s.longest_document = std::max<int64_t>(s.longest_document, t - starts[r] + 1);
  }
}

// dtype kBF16: cuDNN's ragged batch of documents on a GPU (rows attention_*_bf16_documents_*),
// with a sliding window where window > 0.
void add_attention_document_cases(const std::string& label, int64_t batch, int64_t seq, int64_t hq, int64_t hkv,
                                  int64_t d, GemmDtype dtype = GemmDtype::kF32, int64_t window = 0) {
  AttentionShape plain{batch, seq, hq, hkv, d, dtype, window};
  count_documents(document_starts(batch, seq), seq, plain);
  const int64_t rows = batch * seq, stride = plain.qkv_stride();
  const bool bf16 = dtype == GemmDtype::kBF16;
  const std::string kind = bf16 ? "bf16_" : "";
  const Tol tol = bf16 ? Tol::kBf16Attention : Tol::kAttention;
  add("attention_forward_" + kind + "documents_" + label, tol, [=](Arena& a, Rng& rng) {
    AttentionShape s = plain;
    s.doc_start = a.put(document_starts(batch, seq));
    float* qkv = a.put(rng.floats(rows * stride, -1.5f, 1.5f));
    float* out = a.put(std::vector<float>(size_t(rows * hq * d)));
    float* lse = a.put(std::vector<float>(size_t(batch * hq * seq)));
    a.nn().attention_forward(s, out, lse, qkv);
    Outputs o;
    o.add("out", a.get(out, size_t(rows * hq * d)));
    o.add("lse", a.get(lse, size_t(batch * hq * seq)));
    return o;
  });
  add("attention_backward_" + kind + "documents_" + label, tol, [=](Arena& a, Rng& rng) {
    const std::vector<int32_t> starts = document_starts(batch, seq);
    AttentionShape host = plain;
    host.doc_start = starts.data();
    auto qkv_host = rng.floats(rows * stride, -1.5f, 1.5f);
    std::vector<float> out_host(size_t(rows * hq * d)), lse_host(size_t(batch * hq * seq));
    backend_for(Device::cpu()).nn().attention_forward(host, out_host.data(), lse_host.data(), qkv_host.data());
    AttentionShape s = plain;
    s.doc_start = a.put(starts);
    float* qkv = a.put(qkv_host);
    float* out = a.put(out_host);
    const float* lse = a.put(lse_host);
    float* dout = a.put(rng.floats(rows * hq * d));
    float* dqkv = a.put(rng.floats(rows * stride));
    float* scratch = a.put(std::vector<float>(size_t(2 * batch * hq * seq * d)));
    a.nn().attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
    Outputs o;
    o.add("dqkv", a.get(dqkv, size_t(rows * stride)));
    return o;
  });
}

// bf16 compute with attention's output stored as bf16, as the model stores its GEMM inputs
// (act_ref.h). Forward: on each backend the stored output must be that backend's fp32 output
// narrowed, bit for bit (cuDNN's O is bf16 already; the fp32 kernels round once); then the rows
// compare across backends. Backward: O is given as bf16, and D = rowsum(dO . O) reads it.
void add_attention_bf16out_cases(const std::string& label, int64_t batch, int64_t seq, int64_t hq, int64_t hkv,
                                 int64_t d) {
  const AttentionShape s{batch, seq, hq, hkv, d, GemmDtype::kBF16};
  const int64_t rows = batch * seq, stride = s.qkv_stride(), out_n = rows * hq * d, lse_n = batch * hq * seq;
  add("attention_forward_bf16out_" + label, Tol::kBf16Attention, [=](Arena& a, Rng& rng) {
    float* qkv = a.put(rng.floats(rows * stride, -1.5f, 1.5f));
    float* lse = a.put(std::vector<float>(size_t(lse_n)));
    Outputs o = bf16_store_outputs(a, out_n, [&](ActRef out) { a.nn().attention_forward(s, out, lse, qkv); });
    o.add("lse", a.get(lse, size_t(lse_n)));
    return o;
  });
  add("attention_backward_bf16out_" + label, Tol::kBf16Attention, [=](Arena& a, Rng& rng) {
    // O (bf16) and lse from the CPU forward on the host, the same inputs for both sides.
    auto qkv_host = rng.floats(rows * stride, -1.5f, 1.5f);
    std::vector<uint16_t> out_host(static_cast<size_t>(out_n));
    std::vector<float> lse_host(static_cast<size_t>(lse_n));
    backend_for(Device::cpu()).nn().attention_forward(s, ActRef::bf16(out_host.data()), lse_host.data(),
                                                      qkv_host.data());
    float* qkv = a.put(qkv_host);
    uint16_t* out = a.put(out_host);  // read only
    const float* lse = a.put(lse_host);
    float* dout = a.put(rng.floats(out_n));
    float* dqkv = a.put(rng.floats(rows * stride));  // overwritten
    float* scratch = a.put(std::vector<float>(size_t(2 * batch * hq * seq * d)));
    a.nn().attention_backward(s, dqkv, scratch, dout, ActRef::bf16(out), lse, qkv);
    Outputs o;
    o.add("dqkv", a.get(dqkv, size_t(rows * stride)));
    return o;
  });
  // qkv stored as bf16 too (the projection's bf16 GEMM and RoPE write it): on each backend the
  // results must be those of its widened fp32 copy, bit for bit; then the rows compare backends.
  add("attention_forward_bf16qkv_" + label, Tol::kBf16Attention, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> qkv_bits = to_bf16(rng.floats(rows * stride, -1.5f, 1.5f));
    uint16_t* qkv16 = a.put(qkv_bits);
    float* qkv32 = a.put(widened_bf16(qkv_bits));
    uint16_t* from16 = a.put(std::vector<uint16_t>(size_t(out_n)));
    uint16_t* from32 = a.put(std::vector<uint16_t>(size_t(out_n)));
    float* lse16 = a.put(std::vector<float>(size_t(lse_n)));
    float* lse32 = a.put(std::vector<float>(size_t(lse_n)));
    a.nn().attention_forward(s, ActRef::bf16(from16), lse16, ActRef::bf16(qkv16));
    a.nn().attention_forward(s, ActRef::bf16(from32), lse32, qkv32);
    Outputs o = same_bits_outputs(a, from16, from32, out_n, "out_bf16");
    Outputs l = same_bits_outputs(a, static_cast<const float*>(lse16), static_cast<const float*>(lse32), lse_n, "lse");
    o.arrays.push_back(std::move(l.arrays.front()));
    return o;
  });
  add("attention_backward_bf16qkv_" + label, Tol::kBf16Attention, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> qkv_bits = to_bf16(rng.floats(rows * stride, -1.5f, 1.5f));
    std::vector<float> qkv_host = widened_bf16(qkv_bits);
    std::vector<uint16_t> out_host(static_cast<size_t>(out_n));
    std::vector<float> lse_host(static_cast<size_t>(lse_n));
    backend_for(Device::cpu()).nn().attention_forward(s, ActRef::bf16(out_host.data()), lse_host.data(),
                                                      qkv_host.data());
    uint16_t* qkv16 = a.put(qkv_bits);
    float* qkv32 = a.put(qkv_host);
    uint16_t* out = a.put(out_host);  // read only
    const float* lse = a.put(lse_host);
    float* dout = a.put(rng.floats(out_n));
    float* from16 = a.put(std::vector<float>(size_t(rows * stride)));
    float* from32 = a.put(std::vector<float>(size_t(rows * stride)));
    float* scratch = a.put(std::vector<float>(size_t(2 * batch * hq * seq * d)));
    a.nn().attention_backward(s, from16, scratch, dout, ActRef::bf16(out), lse, ActRef::bf16(qkv16));
    a.nn().attention_backward(s, from32, scratch, dout, ActRef::bf16(out), lse, qkv32);
    return same_bits_outputs(a, static_cast<const float*>(from16), static_cast<const float*>(from32), rows * stride,
                             "dqkv");
  });
  // Every array bf16, as bf16 activations store dO (its GEMM's output) and dqkv too: on each
  // backend dqkv must be the fp32-gradient backward's, on the widened dO, narrowed, bit for bit;
  // then the rows compare backends.
  add("attention_backward_bf16grads_" + label, Tol::kBf16Attention, [=](Arena& a, Rng& rng) {
    const std::vector<uint16_t> qkv_bits = to_bf16(rng.floats(rows * stride, -1.5f, 1.5f));
    std::vector<uint16_t> out_host(static_cast<size_t>(out_n));
    std::vector<float> lse_host(static_cast<size_t>(lse_n));
    backend_for(Device::cpu()).nn().attention_forward(s, ActRef::bf16(out_host.data()), lse_host.data(),
                                                      ActRef::bf16(const_cast<uint16_t*>(qkv_bits.data())));
    uint16_t* qkv = a.put(qkv_bits);
    uint16_t* out = a.put(out_host);  // read only
    const float* lse = a.put(lse_host);
    const std::vector<uint16_t> dout_bits = to_bf16(rng.floats(out_n));
    uint16_t* dout16 = a.put(dout_bits);
    float* dout32 = a.put(widened_bf16(dout_bits));
    float* scratch = a.put(std::vector<float>(size_t(2 * batch * hq * seq * d)));
    return bf16_store_outputs(a, rows * stride, [&](ActRef dqkv) {
      const ActRef dout = dqkv.is_bf16() ? ActRef::bf16(dout16) : ActRef(dout32);
      a.nn().attention_backward(s, dqkv, scratch, dout, ActRef::bf16(out), lse, ActRef::bf16(qkv));
    });
  });
}

void add_decode_case(const std::string& label, int64_t hq, int64_t hkv, int64_t d, int64_t rows, int64_t first,
                     int64_t window = 0, int64_t score_scalar = 0) {
  AttentionShape s{1, rows, hq, hkv, d, GemmDtype::kF32, window};
  s.score_scalar = score_scalar;
  // Every sum in the CPU's order (attention_cuda.h): bitwise.
  add("attention_decode_" + label, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int64_t positions = first + rows, kv_row = hkv * d;
    const float* qkv = a.put(rng.floats(rows * s.qkv_stride(), -1.5f, 1.5f));
    const float* kc = a.put(rng.floats(positions * kv_row, -1.5f, 1.5f));
    const float* vc = a.put(rng.floats(positions * kv_row));
    float* out = a.put(std::vector<float>(size_t(rows * hq * d)));
    a.nn().attention_decode(s, out, qkv, rows, first, kc, vc);
    Outputs o;
    o.add("out", a.get(out, size_t(rows * hq * d)));
    return o;
  });
}

void add_matmul_case(const std::string& label, GemmDtype dtype, GemmShape g, bool accumulate) {
  add("matmul_" + label, Tol::kGemm, [=](Arena& a, Rng& rng) {
    const bool ta = g.trans_a == Trans::kT, tb = g.trans_b == Trans::kT;
    const int64_t lda = g.lda ? g.lda : (ta ? g.m : g.k), ldb = g.ldb ? g.ldb : (tb ? g.k : g.n);
    const int64_t ldc = g.ldc ? g.ldc : g.n;
    const auto av = rng.floats((ta ? g.k : g.m) * lda), bv = rng.floats((tb ? g.n : g.k) * ldb);
    const void* A;
    const void* B;
    if (dtype == GemmDtype::kF32) {
      A = a.put(av);
      B = a.put(bv);
    } else {
      A = a.put(dtype == GemmDtype::kBF16 ? to_bf16(av) : to_f16(av));
      B = a.put(dtype == GemmDtype::kBF16 ? to_bf16(bv) : to_f16(bv));
    }
    float* c = a.put(rng.floats(g.m * ldc));
    a.nn().matmul(dtype, g, A, B, c, accumulate);
    Outputs o;
    o.add("c", a.get(c, size_t(g.m * ldc)));
    return o;
  });
}

// A bf16 GEMM output: within the GEMM tolerance across backends; on the CPU bit for bit the
// fp32 GEMM plus the bias rounded to bf16, narrowed (NnOps::matmul_bf16_out; the bias operand
// cuBLASLt's epilogue takes on a GPU). With a residual (the residual stream under bf16
// activations), on the CPU bit for bit the fp32 GEMM accumulated onto the widened residual, plus
// the rounded bias, narrowed; `in_place` adds onto C itself (the KV-cache decoder's form).
enum class Residual { kNone, kOther, kInPlace };
void add_matmul_bf16_out_case(const std::string& label, GemmDtype dtype, GemmShape g, bool with_bias,
                              Residual residual = Residual::kNone) {
  add("matmul_bf16out_" + label, Tol::kGemm, [=](Arena& a, Rng& rng) {
    const bool ta = g.trans_a == Trans::kT, tb = g.trans_b == Trans::kT;
    const int64_t lda = g.lda ? g.lda : (ta ? g.m : g.k), ldb = g.ldb ? g.ldb : (tb ? g.k : g.n);
    const int64_t ldc = g.ldc ? g.ldc : g.n;  // C's rows ldc apart (the head's padded logits)
    const auto av = rng.floats((ta ? g.k : g.m) * lda), bv = rng.floats((tb ? g.n : g.k) * ldb);
    const void* A = dtype == GemmDtype::kF32 ? static_cast<const void*>(a.put(av)) : a.put(to_bf16(av));
    const void* B = dtype == GemmDtype::kF32 ? static_cast<const void*>(a.put(bv)) : a.put(to_bf16(bv));
    const std::vector<float> bias_values = rng.floats(g.n, -2.0f, 2.0f);
    const float* bias = with_bias ? a.put(bias_values) : nullptr;
    const std::vector<uint16_t> residual_bits = to_bf16(rng.floats(g.m * ldc, -4.0f, 4.0f));
    uint16_t* c16 = a.put(residual == Residual::kInPlace ? residual_bits : std::vector<uint16_t>(size_t(g.m * ldc)));
    const uint16_t* add = residual == Residual::kOther ? a.put(residual_bits) : residual == Residual::kInPlace ? c16 : nullptr;
    a.nn().matmul_bf16_out(dtype, g, A, B, bias, add, c16);
    const std::vector<uint16_t> got = a.get_u16(c16, size_t(g.m * ldc));
    if (a.nn().device().is_cpu()) {
      float* c32 = a.put(residual == Residual::kNone ? std::vector<float>(size_t(g.m * ldc)) : widened_bf16(residual_bits));
      a.nn().matmul(dtype, g, A, B, c32, residual != Residual::kNone);
      if (with_bias) a.nn().bias_add(c32, a.put(widened_bf16(to_bf16(bias_values))), g.m, g.n, ldc);
      const std::vector<uint16_t> narrowed = to_bf16(a.get(c32, size_t(g.m * ldc)));
      int64_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += got[i] != narrowed[i];
      EXPECT_EQ(differ, 0) << "the CPU's bf16 GEMM output differs from its narrowed fp32 GEMM (+ residual, + bias) in "
                           << differ << " elements";
    }
    Outputs o;
    o.add("c_bf16", widened_bf16(got));
    return o;
  });
}

// An fp32 GEMM output with its bias (NnOps::matmul_bias: on a GPU cuBLASLt's bias epilogue,
// after beta C; on the CPU matmul then bias_add), onto C or not.
void add_matmul_bias_case(const std::string& label, GemmDtype dtype, GemmShape g, bool accumulate) {
  add("matmul_bias_" + label, Tol::kGemm, [=](Arena& a, Rng& rng) {
    const bool ta = g.trans_a == Trans::kT, tb = g.trans_b == Trans::kT;
    const int64_t lda = g.lda ? g.lda : (ta ? g.m : g.k), ldb = g.ldb ? g.ldb : (tb ? g.k : g.n);
    const int64_t ldc = g.ldc ? g.ldc : g.n;
    const auto av = rng.floats((ta ? g.k : g.m) * lda), bv = rng.floats((tb ? g.n : g.k) * ldb);
    const void* A = dtype == GemmDtype::kF32 ? static_cast<const void*>(a.put(av)) : a.put(to_bf16(av));
    const void* B = dtype == GemmDtype::kF32 ? static_cast<const void*>(a.put(bv)) : a.put(to_bf16(bv));
    const float* bias = a.put(rng.floats(g.n, -2.0f, 2.0f));
    float* c = a.put(rng.floats(g.m * ldc, -4.0f, 4.0f));
    a.nn().matmul_bias(dtype, g, A, B, bias, c, accumulate);
    Outputs o;
    o.add("c", a.get(c, size_t(g.m * ldc)));
    return o;
  });
}

// A weight gradient with its bias gradient (NnOps::matmul_bias_grad): dW (out x in, or in x out)
// and dbias both start non-zero (gradients kept from earlier micro-batches); dbias is added to,
// dW as `into` says (added by the GEMM, added whole, or written). dy
// (`rows` x `out`, as stored) is the GEMM's A operand (W stored (out, in), Qwen's qkv:
// BiasGradOf::kA) or its B (W stored (in, out), GPT-2's Conv1D: kB). dy is stored as the GEMM's
// operand type (bf16 or fp32: on a GPU cuBLASLt's bias-gradient epilogue sums it), or, with
// `dy_fp32` under a bf16 GEMM, stored fp32 and narrowed for the GEMM (on a GPU the bias gradient
// then runs as its own column sums of the fp32 dy). GEMM class for dbias too: cuBLASLt sums over
// k in its own order.
void add_matmul_bias_grad_case(const std::string& label, GemmDtype dtype, BiasGradOf side, int64_t rows, int64_t out,
                               int64_t in, GradInto into, bool dy_fp32 = false) {
  add("matmul_bias_grad_" + label, Tol::kGemm, [=](Arena& a, Rng& rng) {
    const std::vector<float> dy_values = rng.floats(rows * out), x_values = rng.floats(rows * in);
    const auto operand = [&](const std::vector<float>& v) -> const void* {
      return dtype == GemmDtype::kF32 ? static_cast<const void*>(a.put(v)) : a.put(to_bf16(v));
    };
    const void* dy_operand = operand(dy_values);
    const void* x_operand = operand(x_values);
    ActRef dy = dtype == GemmDtype::kF32 ? ActRef(static_cast<float*>(const_cast<void*>(dy_operand)))
                                         : ActRef::bf16(static_cast<uint16_t*>(const_cast<void*>(dy_operand)));
    if (dy_fp32) dy = ActRef(a.put(dy_values));
    const bool on_a = side == BiasGradOf::kA;
    const GemmShape g = on_a ? GemmShape{out, in, rows, out, in, in, Trans::kT, Trans::kN}
                             : GemmShape{in, out, rows, in, out, out, Trans::kT, Trans::kN};
    float* dw = a.put(rng.floats(out * in));
    float* dbias = a.put(rng.floats(out));
    a.nn().matmul_bias_grad(dtype, g, on_a ? dy_operand : x_operand, on_a ? x_operand : dy_operand, dw, into, side,
                            dy, dbias);
    Outputs o;
    o.add("dw", a.get(dw, size_t(out * in)));
    o.add("dbias", a.get(dbias, size_t(out)));
    return o;
  });
}

void add_copy_cases() {
  for (GemmDtype dt : {GemmDtype::kBF16, GemmDtype::kF16}) {
    const std::string tag = dt == GemmDtype::kBF16 ? "bf16" : "f16";
    add("narrow_widen_" + tag + "_odd", Tol::kBitwise, [=](Arena& a, Rng& rng) {
      std::vector<float> v = rng.floats(1001, -70000.0f, 70000.0f);
      for (size_t i = 0; i < 200; ++i) v[i] = rng.uniform(-1e-6f, 1e-6f);  // fp16 subnormals
      v[200] = INFINITY;
      v[201] = -0.0f;
      v[202] = std::nanf("");
      const float* src = a.put(v);
      uint16_t* narrow = a.put(std::vector<uint16_t>(v.size()));
      float* wide = a.put(std::vector<float>(v.size()));
      a.nn().narrow(dt, narrow, src, int64_t(v.size()));
      a.nn().widen(dt, wide, narrow, int64_t(v.size()));
      const auto bits = a.get_u16(narrow, v.size());
      Outputs o;
      std::vector<float> as_float(bits.begin(), bits.end());  // 16-bit codes, exact in fp32
      o.add("narrow_bits", as_float);
      o.add("widened", a.get(wide, v.size()));
      return o;
    });
  }
  add("copy_zero_accumulate_odd", Tol::kBitwise, [](Arena& a, Rng& rng) {
    const int64_t n = 100003;
    const float* src = a.put(rng.floats(n));
    float* dst = a.put(rng.floats(n));
    float* copied = a.put(std::vector<float>(size_t(n)));
    float* zeroed = a.put(rng.floats(n));
    a.nn().accumulate(dst, src, n);
    a.nn().copy(copied, dst, n);
    a.nn().zero(zeroed, n - 1);
    Outputs o;
    o.add("accumulated", a.get(dst, size_t(n)));
    o.add("copied", a.get(copied, size_t(n)));
    o.add("zeroed", a.get(zeroed, size_t(n)));
    return o;
  });
}

// ---- FP8 ------------------------------------------------------------------------------------

using numerics::Fp8Format;
using numerics::Fp8Tiling;

const char* tiling_name(Fp8Tiling t) {
  switch (t) {
    case Fp8Tiling::kTensor: return "tensor";
    case Fp8Tiling::kRow1x128: return "row1x128";
    case Fp8Tiling::kCol128x1: return "col128x1";
    default: return "block128";
  }
}

// rows x cols values whose magnitudes vary over 2^-9..2^9 along rows and columns, so neighbouring
// tiles get different scales and small values land on FP8 subnormals. With specials: a NaN at
// (5, 7), +inf at (100, 150), and zeros over row 2's and rows 128..'s columns 128.. (all-zero
// 1 x 128, 128 x 1 and 128 x 128 tiles), where the shape has them.
std::vector<float> fp8_inputs(Rng& rng, int64_t rows, int64_t cols, bool specials) {
  std::vector<float> v(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      v[size_t(r * cols + c)] = rng.uniform(-1.0f, 1.0f) * std::ldexp(1.0f, int((r * 7 + c / 37) % 19) - 9);
    }
  }
  if (!specials) return v;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 128; c < cols; ++c) {
      if (r == 2 || r >= 128) v[size_t(r * cols + c)] = 0.0f;
    }
  }
  if (rows > 5 && cols > 7) v[size_t(5 * cols + 7)] = std::nanf("");
  if (rows > 100 && cols > 150) v[size_t(100 * cols + 150)] = INFINITY;
  return v;
}

struct Fp8QuantizeCase {
  Fp8Tiling tiling;
  Fp8Format format;
  bool bf16_input;
  bool specials;
  int margin = 0;
  bool power_of_two = true;
  float given_scale = 0.0f;  // > 0: delayed scaling with this scale
};

void add_fp8_quantize_case(const std::string& label, int64_t rows, int64_t cols, Fp8QuantizeCase q) {
  const std::string name = std::string("fp8_quantize_") + tiling_name(q.tiling) + (q.bf16_input ? "_bf16_" : "_f32_") + label;
  add(name, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const auto xs = fp8_inputs(rng, rows, cols, q.specials);
    const int64_t scales = numerics::fp8_scale_count(q.tiling, rows, cols);
    Fp8QuantizeArgs args;
    if (q.bf16_input) {
      args.x_bf16 = a.put(to_bf16(xs));
    } else {
      args.x_f32 = a.put(xs);
    }
    args.rows = rows;
    args.cols = cols;
    args.tiling = q.tiling;
    args.format = q.format;
    args.margin = q.margin;
    args.power_of_two = q.power_of_two;
    if (q.given_scale > 0.0f) args.given_scale = a.put(std::vector<float>{q.given_scale});
    args.codes = a.put(std::vector<uint8_t>(size_t(rows * cols), 0xAB));
    args.scale_inv = a.put(std::vector<float>(size_t(scales), -1.0f));
    args.amax = a.put(std::vector<float>{0.0f});  // folded into: +0 is the max's start
    a.nn().fp8_quantize(args);
    Outputs o;
    o.add("codes", a.get_u8_as_f32(args.codes, size_t(rows * cols)));
    o.add("scale_inv", a.get(args.scale_inv, size_t(scales)));
    o.add("amax", a.get(args.amax, 1));
    return o;
  });
}

// Quantizes host values on the arena's backend (current scaling) into a GEMM operand.
Fp8Operand quantize_operand(Arena& a, const std::vector<float>& xs, int64_t rows, int64_t cols, Fp8Tiling tiling,
                            Fp8Format format, bool power_of_two) {
  Fp8QuantizeArgs args;
  args.x_f32 = a.put(xs);
  args.rows = rows;
  args.cols = cols;
  args.tiling = tiling;
  args.format = format;
  args.power_of_two = power_of_two;
  args.codes = a.put(std::vector<uint8_t>(size_t(rows * cols)));
  args.scale_inv = a.put(std::vector<float>(size_t(numerics::fp8_scale_count(tiling, rows, cols))));
  a.nn().fp8_quantize(args);
  Fp8Operand op;
  op.codes = args.codes;
  op.scale_inv = args.scale_inv;
  op.rows = rows;
  op.cols = cols;
  op.tiling = tiling;
  op.format = format;
  op.power_of_two = power_of_two;
  return op;
}

struct Fp8GemmOperands {
  Fp8Tiling tiling_a, tiling_b;
  Fp8Format format_a = Fp8Format::kE4M3, format_b = Fp8Format::kE4M3;
  bool power_of_two = true;
};

// C (+)= op(A) op(B) of operands quantized from values whose rows vary in magnitude (2^-2..2^2),
// so tiles get different scales.
void add_fp8_matmul_case(const std::string& label, GemmShape g, Fp8GemmOperands f, bool accumulate) {
  add("matmul_fp8_" + label, Tol::kFp8Gemm, [=](Arena& a, Rng& rng) {
    const bool ta = g.trans_a == Trans::kT, tb = g.trans_b == Trans::kT;
    const int64_t a_rows = ta ? g.k : g.m, a_cols = ta ? g.m : g.k, b_rows = tb ? g.n : g.k, b_cols = tb ? g.k : g.n;
    const auto values = [&](int64_t rows, int64_t cols) {
      std::vector<float> v = rng.floats(rows * cols);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) v[size_t(r * cols + c)] *= std::ldexp(1.0f, int(r % 5) - 2);
      }
      return v;
    };
    const Fp8Operand A = quantize_operand(a, values(a_rows, a_cols), a_rows, a_cols, f.tiling_a, f.format_a, f.power_of_two);
    const Fp8Operand B = quantize_operand(a, values(b_rows, b_cols), b_rows, b_cols, f.tiling_b, f.format_b, f.power_of_two);
    void* workspace = a.raw(size_t(a.nn().fp8_matmul_workspace_bytes(a_rows * a_cols, b_rows * b_cols, f.power_of_two)));
    const int64_t ldc = g.ldc ? g.ldc : g.n;
    float* c = a.put(rng.floats(g.m * ldc));
    a.nn().matmul_fp8(g, A, B, c, accumulate, workspace);
    Outputs o;
    o.add("c", a.get(c, size_t(g.m * ldc)));
    return o;
  });
}

// A Linear layer's three GEMMs for x (m, in) and W (out, in): forward y = x W^T (m, out), dgrad
// dx = dy W (m, in), wgrad dW += dy^T x (out, in). Block tilings as the policy uses them: 1 x 128
// activations and gradients, 128 x 128 weights, 128 x 1 (along the tokens) for wgrad's operands;
// gradients in E5M2 for dgrad and wgrad (the hybrid format).
void add_fp8_linear_cases(const std::string& label, int64_t m, int64_t in, int64_t out) {
  using T = Trans;
  const auto e4 = Fp8Format::kE4M3, e5 = Fp8Format::kE5M2;
  const Fp8Tiling tensor = Fp8Tiling::kTensor, row = Fp8Tiling::kRow1x128, col = Fp8Tiling::kCol128x1,
                  block = Fp8Tiling::kBlock128;
  add_fp8_matmul_case("fwd_tensor_" + label, GemmShape{m, out, in, 0, 0, 0, T::kN, T::kT}, {tensor, tensor, e4, e4}, false);
  add_fp8_matmul_case("fwd_block_" + label, GemmShape{m, out, in, 0, 0, 0, T::kN, T::kT}, {row, block, e4, e4}, false);
  add_fp8_matmul_case("dgrad_tensor_" + label, GemmShape{m, in, out, 0, 0, 0, T::kN, T::kN}, {tensor, tensor, e5, e4}, false);
  add_fp8_matmul_case("dgrad_block_" + label, GemmShape{m, in, out, 0, 0, 0, T::kN, T::kN}, {row, block, e5, e4}, false);
  add_fp8_matmul_case("wgrad_tensor_" + label, GemmShape{out, in, m, 0, 0, 0, T::kT, T::kN}, {tensor, tensor, e5, e4}, true);
  add_fp8_matmul_case("wgrad_block_" + label, GemmShape{out, in, m, 0, 0, 0, T::kT, T::kN}, {col, col, e5, e4}, true);
}

void add_fp8_cases() {
  const auto e4 = Fp8Format::kE4M3, e5 = Fp8Format::kE5M2;
  for (Fp8Tiling t : {Fp8Tiling::kTensor, Fp8Tiling::kRow1x128, Fp8Tiling::kCol128x1, Fp8Tiling::kBlock128}) {
    for (bool bf16 : {false, true}) {
      add_fp8_quantize_case("130x200_specials", 130, 200, {t, e4, bf16, true});
      add_fp8_quantize_case("t1_e5m2", 1, 200, {t, e5, bf16, false});
      add_fp8_quantize_case("256x384", 256, 384, {t, e4, bf16, false});
    }
  }
  // Delayed scaling (a given scale: large values saturate, small ones flush to FP8 subnormals or
  // zero), and a non-power-of-two scale with a margin.
  add_fp8_quantize_case("delayed_130x200", 130, 200, {Fp8Tiling::kTensor, e4, false, true, 0, true, 1.0f});
  add_fp8_quantize_case("delayed_e5m2_t1", 1, 200, {Fp8Tiling::kTensor, e5, true, false, 0, true, 0.25f});
  add_fp8_quantize_case("margin1_not_pow2", 130, 200, {Fp8Tiling::kBlock128, e4, false, false, 1, false});
  add_fp8_quantize_case("margin2_not_pow2_rows", 130, 200, {Fp8Tiling::kRow1x128, e5, true, true, 2, false});
  // GEMMs: 128-aligned shapes (the cuBLASLt FP8 path), odd ones (k = 200 is no multiple of 16:
  // the exact fallback), cut-short edge tiles, T = 1 with a long k (32 blocks), and
  // non-power-of-two scales.
  add_fp8_linear_cases("256x512x384", 256, 512, 384);
  add_fp8_linear_cases("odd_130x200x200", 130, 200, 200);
  add_fp8_linear_cases("partial_tiles_144x208x176", 144, 208, 176);  // multiples of 16, not of 128
  using T = Trans;
  add_fp8_matmul_case("fwd_block_t1_k4096", GemmShape{1, 512, 4096, 0, 0, 0, T::kN, T::kT},
                      {Fp8Tiling::kRow1x128, Fp8Tiling::kBlock128}, false);
  add_fp8_matmul_case("fwd_tensor_t1_k4096", GemmShape{1, 512, 4096, 0, 0, 0, T::kN, T::kT},
                      {Fp8Tiling::kTensor, Fp8Tiling::kTensor}, false);
  add_fp8_matmul_case("fwd_tensor_not_pow2", GemmShape{64, 256, 256, 0, 0, 0, T::kN, T::kT},
                      {Fp8Tiling::kTensor, Fp8Tiling::kTensor, e4, e4, false}, true);
}

// ---- FP4 ------------------------------------------------------------------------------------

using kernels::Fp4Scale;

struct Fp4QuantizeCase {
  Fp4Scale scale = Fp4Scale::kE4M3;  // block 16 (NVFP4) with E4M3, 32 (MXFP4) with E8M0
  bool block_2d = false;
  int rht_size = 0;
  bool stochastic = false;
  bool bf16_input = false;
  bool transposed = false;
  bool specials = false;
  bool sr_prescale = false;  // Tseng et al.'s 3/4 (E8M0)
};

int fp4_block_of(Fp4Scale scale) { return scale == Fp4Scale::kE4M3 ? 16 : 32; }

// The quantization of fp4_operand.h on each backend: codes, block scales and the tensor's decode
// scale, bit for bit. Inputs vary over 2^-9..2^9 (fp8_inputs: neighbouring blocks get other
// scales, and MXFP4 blocks land on E8M0 codes far from 127), with NaN, inf and all-zero blocks
// where asked; a transposed source is stored (cols, rows).
void add_fp4_quantize_case(const std::string& label, int64_t rows, int64_t cols, Fp4QuantizeCase q) {
  const std::string name = std::string("fp4_quantize_") + (q.scale == Fp4Scale::kE4M3 ? "nvfp4_" : "mxfp4_") + label;
  add(name, Tol::kBitwise, [=](Arena& a, Rng& rng) {
    const int block = fp4_block_of(q.scale);
    const int64_t scale_count = rows * kernels::fp4_blocks_per_row(cols, block);
    const auto xs = q.transposed ? fp8_inputs(rng, cols, rows, q.specials) : fp8_inputs(rng, rows, cols, q.specials);
    Fp4QuantizeArgs args;
    if (q.bf16_input) {
      args.x_bf16 = a.put(to_bf16(xs));
    } else {
      args.x_f32 = a.put(xs);
    }
    args.rows = rows;
    args.cols = cols;
    args.transposed = q.transposed;
    args.block = block;
    args.scale = q.scale;
    args.block_2d = q.block_2d;
    if (q.rht_size > 0) {
      std::vector<float> signs(size_t(q.rht_size));
      for (float& s : signs) s = (rng.bits() & 1u) != 0u ? -1.0f : 1.0f;
      args.rht_size = q.rht_size;
      args.rht_signs = a.put(signs);
    }
    args.stochastic = q.stochastic;
    args.sr_prescale = q.sr_prescale;
    args.key = numerics::RandomKey{1234, 7, numerics::RandomPurpose::kFp4Gradient};
    args.first_index = uint64_t(3) << 40;
    args.codes = a.put(std::vector<uint8_t>(size_t(rows * cols), 0xAB));
    args.scales = a.put(std::vector<uint8_t>(size_t(scale_count), 0xCD));
    args.decode_scale = a.put(std::vector<float>{-1.0f});
    args.workspace = a.put(std::vector<float>(size_t(rows * cols)));
    a.nn().fp4_quantize(args);
    Outputs o;
    o.add("codes", a.get_u8_as_f32(args.codes, size_t(rows * cols)));
    o.add("scales", a.get_u8_as_f32(args.scales, size_t(scale_count)));
    o.add("decode_scale", a.get(args.decode_scale, 1));
    return o;
  });
}

// C (m, n) (+)= A (m, k) · B (n, k)^T of operands each backend quantized itself (round to nearest,
// rows of magnitudes 2^-2..2^2 so blocks get different scales). Every product of two dequantized
// elements is exact, so only the order of the fp32 sums differs: the GEMM class. On a GPU with FP4
// tensor cores this is cuBLASLt's FP4 GEMM where it takes the shape (k a multiple of 32), else
// the device emulation (gemm_fp4_cublaslt.h).
void add_fp4_matmul_case(const std::string& label, int64_t m, int64_t n, int64_t k, Fp4Scale scale, bool accumulate) {
  add(std::string("matmul_fp4_") + (scale == Fp4Scale::kE4M3 ? "nvfp4_" : "mxfp4_") + label, Tol::kGemm,
      [=](Arena& a, Rng& rng) {
        const int block = fp4_block_of(scale);
        const auto quantize = [&](int64_t rows) {
          std::vector<float> v = rng.floats(rows * k);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < k; ++c) v[size_t(r * k + c)] *= std::ldexp(1.0f, int(r % 5) - 2);
          }
          Fp4QuantizeArgs args;
          args.x_f32 = a.put(v);
          args.rows = rows;
          args.cols = k;
          args.block = block;
          args.scale = scale;
          args.codes = a.put(std::vector<uint8_t>(size_t(rows * k)));
          args.scales = a.put(std::vector<uint8_t>(size_t(rows * kernels::fp4_blocks_per_row(k, block))));
          args.decode_scale = a.put(std::vector<float>{0.0f});
          args.workspace = a.put(std::vector<float>(size_t(rows * k)));
          a.nn().fp4_quantize(args);
          return Fp4Operand{args.codes, args.scales, args.decode_scale, rows, k, block, scale};
        };
        const Fp4Operand A = quantize(m), B = quantize(n);
        void* workspace = a.raw(size_t(a.nn().fp4_matmul_workspace_bytes(m, n, k, block)));
        float* c = a.put(rng.floats(m * n));
        a.nn().matmul_fp4(m, n, k, A, B, c, accumulate, workspace);
        Outputs o;
        o.add("c", a.get(c, size_t(m * n)));
        return o;
      });
}

// The recipes' operands: NVFP4 activations (1D) and weights (2D 16 x 16 tiles, from bf16),
// wgrad's transposed operands with the 16-point transform and stochastic rounding; MXFP4's
// backward operands with the 64-point transform, stochastic rounding and Tseng et al.'s 3/4
// pre-scale; odd shapes (a short last block, a row shorter than the transform), T = 1, and NaN,
// inf and all-zero blocks.
void add_fp4_cases(bool sim) {
  const Fp4Scale nv = Fp4Scale::kE4M3, mx = Fp4Scale::kE8M0;
  const int64_t rows = sim ? 33 : 130, cols = sim ? 136 : 200;
  add_fp4_quantize_case("act_specials", rows, cols, {nv, false, 0, false, false, false, true});
  add_fp4_quantize_case("weight_2d_bf16", rows, cols, {nv, true, 0, false, true, false, false});
  add_fp4_quantize_case("wgrad_rht16_sr_transposed", rows, cols, {nv, false, 16, true, false, true, false});
  add_fp4_quantize_case("t1_sr", 1, cols, {nv, false, 0, true, false, false, false});
  add_fp4_quantize_case("specials", rows, cols, {mx, false, 0, false, false, false, true});
  add_fp4_quantize_case("backward_rht64_sr_prescale_bf16_transposed", rows, cols,
                        {mx, false, 64, true, true, true, false, true});
  add_fp4_quantize_case("row_shorter_than_rht", 7, 40, {mx, false, 64, true, false, false, false});
  if (sim) {
    add_fp4_matmul_case("sim_17x24x64", 17, 24, 64, nv, false);
    add_fp4_matmul_case("sim_9x40x96_acc", 9, 40, 96, mx, true);
    add_fp4_matmul_case("sim_odd_k_5x7x50", 5, 7, 50, nv, true);
    return;
  }
  add_fp4_matmul_case("fwd_256x512x384", 256, 512, 384, nv, false);
  add_fp4_matmul_case("wgrad_acc_384x512x256", 384, 512, 256, nv, true);
  add_fp4_matmul_case("dgrad_256x384x512", 256, 384, 512, mx, false);
  add_fp4_matmul_case("odd_k_130x200x200", 130, 200, 200, nv, true);  // k % 32 != 0: emulated everywhere
  add_fp4_matmul_case("t1_k4096", 1, 512, 4096, mx, false);
}

// The rows a GPU simulator can run in a few minutes (~2M thread-instructions/s): every op at
// small shapes that keep the edges; no matmul_fp8 rows (cuBLASLt's FP8 path).
void add_sim_cases() {
  add_norm_cases("stories260k", 66, 64);
  add_norm_cases("t1", 1, 576);
  add_norm_cases("sim_odd", 67, 33);
  add_rmsnorm_backward_case("sim_3_chunks", 130, 40);
  add_rmsnorm_backward_case("sim_wide_dw_global", 65, 12300);
  add_head_norm_cases("sim_gqa", 9, 4, 2, 16);
  add_rope_case("stories260k", 66, 33, 8, 8, 128);
  add_rope_case("sim_d64_kv", 9, 9, 3, 64, 384);
  add_activation_cases("stories260k", 66, 172);
  add_activation_cases("sim_odd", 3, 37);
  add_activation_cases("sim_vec_rows", 5, 64);  // h % 8 == 0: SwiGLU's 16-byte path
  add_gemma_elementwise_cases("sim_odd", 3, 37);
  add_gemma_elementwise_cases("sim_vec_rows", 5, 64);  // h % 8 == 0: GeGLU's 16-byte path
  add_embedding_cases("stories260k", 512, 66, 33, 64, false);
  add_embedding_cases("sim_repeats_wpe", 100, 67, 33, 40, true);  // 67 ids from 100: repeats
  add_embedding_cases("sim_odd_c", 50, 9, 9, 37, true);  // c % 8 != 0: the element-by-element path
  add_bias_cases("sim_part_of_row", 9, 37, 50);
  add_bias_cases("sim_many_rows", 200, 40, 40);
  add_cross_entropy_case("stories260k", 5, 512, true);  // row 1 ignored (target -1)
  add_cross_entropy_case("sim_odd_vocab", 4, 1001, true);
  add_cross_entropy_case("sim_loss_only", 3, 777, false);
  // Rows padded as the model pads them (logits_row_stride): odd V, every row 16-byte aligned.
  add_cross_entropy_case("sim_padded_1001_1024", 4, 1001, true, 1024);
  add_cross_entropy_case("sim_padded_loss_only_300_384", 3, 300, false, 384);
  add_attention_cases("stories260k", 2, 33, 8, 4, 8);
  add_attention_cases("t1", 3, 1, 9, 3, 64);
  add_attention_cases("gqa8_d16", 1, 50, 8, 1, 16);
  add_attention_cases("d96", 1, 33, 4, 2, 96);
  add_attention_document_cases("stories260k", 2, 70, 8, 4, 8);
  add_attention_bf16out_cases("stories260k", 2, 33, 8, 4, 8);  // the fp32 kernels: no cuDNN in simulation
  add_attention_bf16out_cases("t1", 3, 1, 9, 3, 64);
  add_decode_case("stories260k", 8, 4, 8, 1, 40);
  add_decode_case("first_token", 9, 3, 64, 1, 0);
  add_decode_case("sim_rows3", 6, 2, 32, 3, 17);
  add_attention_cases("sim_window5", 2, 40, 4, 2, 16, GemmDtype::kF32, 5);
  add_decode_case("sim_window5", 6, 2, 32, 3, 17, 5);
  add_attention_cases("sim_window5_scalar24", 2, 40, 4, 2, 16, GemmDtype::kF32, 5, 24);  // Gemma 3's scale
  add_decode_case("sim_window5_scalar24", 6, 2, 32, 3, 17, 5, 24);
  // GEMMs: cuBLASLt on a GPU; in the simulator build (FARTHING_SIM_GEMM_DOUBLE) the plain
  // test-double kernel, so these rows check the ops' GEMM plumbing (strides, transposes,
  // accumulate, dtypes) there rather than cuBLASLt.
  using T = Trans;
  add_matmul_case("f32_stories260k_qkv", GemmDtype::kF32, GemmShape{33, 128, 64, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_case("f32_strided_a", GemmDtype::kF32, GemmShape{9, 64, 64, 960, 0, 80, T::kN, T::kT}, true);
  add_matmul_case("sim_bf16_dx", GemmDtype::kBF16, GemmShape{17, 72, 40, 0, 0, 0, T::kN, T::kN}, false);
  add_matmul_case("sim_f16_dw_acc", GemmDtype::kF16, GemmShape{40, 72, 17, 0, 0, 0, T::kT, T::kN}, true);
  add_matmul_bf16_out_case("sim_up", GemmDtype::kBF16, GemmShape{17, 72, 40, 0, 0, 0, T::kN, T::kT}, false);
  // The head's three GEMMs over logits rows padded to logits_row_stride (V 300, rows 384 apart).
  add_matmul_bf16_out_case("sim_head_padded_ldc", GemmDtype::kBF16, GemmShape{9, 300, 40, 0, 0, 384, T::kN, T::kT},
                           false);
  add_matmul_case("sim_head_dgrad_padded_lda", GemmDtype::kBF16, GemmShape{9, 40, 300, 384, 40, 0, T::kN, T::kN},
                  false);
  add_matmul_case("sim_head_wgrad_padded_lda_acc", GemmDtype::kBF16, GemmShape{300, 40, 9, 384, 40, 40, T::kT, T::kN},
                  true);
  add_matmul_bf16_out_case("sim_up_bias", GemmDtype::kBF16, GemmShape{17, 72, 40, 0, 0, 0, T::kN, T::kT}, true);
  add_matmul_bf16_out_case("sim_residual", GemmDtype::kBF16, GemmShape{17, 40, 72, 0, 0, 0, T::kN, T::kT}, false,
                           Residual::kOther);
  add_matmul_bf16_out_case("sim_residual_bias", GemmDtype::kBF16, GemmShape{17, 40, 72, 0, 0, 0, T::kN, T::kT}, true,
                           Residual::kOther);
  add_matmul_bf16_out_case("sim_residual_in_place", GemmDtype::kBF16, GemmShape{17, 40, 72, 0, 0, 0, T::kN, T::kT},
                           false, Residual::kInPlace);
  add_matmul_bias_case("sim_f32", GemmDtype::kF32, GemmShape{17, 72, 40, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_bias_case("sim_bf16_in_residual", GemmDtype::kBF16, GemmShape{17, 40, 72, 0, 0, 0, T::kN, T::kT}, true);
  add_matmul_bias_grad_case("sim_a_bf16", GemmDtype::kBF16, BiasGradOf::kA, 33, 72, 40, GradInto::kAddProduct);
  add_matmul_bias_grad_case("sim_b_f32", GemmDtype::kF32, BiasGradOf::kB, 70, 40, 24, GradInto::kAccumulate);
  add_matmul_bias_grad_case("sim_b_bf16_dy_f32", GemmDtype::kBF16, BiasGradOf::kB, 33, 40, 24, GradInto::kOverwrite,
                            true);
  add_copy_cases();
  const auto e4 = Fp8Format::kE4M3, e5 = Fp8Format::kE5M2;
  for (Fp8Tiling t : {Fp8Tiling::kTensor, Fp8Tiling::kRow1x128, Fp8Tiling::kCol128x1, Fp8Tiling::kBlock128}) {
    for (bool bf16 : {false, true}) {
      add_fp8_quantize_case("sim_130x136_specials", 130, 136, {t, e4, bf16, true});  // partial 128-tiles
      add_fp8_quantize_case("t1_e5m2", 1, 200, {t, e5, bf16, false});
    }
  }
  add_fp8_quantize_case("delayed_e5m2_t1", 1, 200, {Fp8Tiling::kTensor, e5, true, false, 0, true, 0.25f});
  add_fp8_quantize_case("sim_delayed_130x136", 130, 136, {Fp8Tiling::kTensor, e4, false, true, 0, true, 1.0f});
  add_fp8_quantize_case("sim_margin2_not_pow2_rows", 130, 136, {Fp8Tiling::kRow1x128, e5, true, true, 2, false});
  add_fp4_cases(true);
}

const std::vector<Case>& cases() {
  if (!g_cases.empty()) return g_cases;
  if (test::sim_sizes()) {
    add_sim_cases();
    return g_cases;
  }
  // Norms: stories260K (dim 64), SmolLM2-135M (576; 67 rows: two column chunks), Llama-3.2-1B
  // (2048), Llama-3.1-8B (4096), T = 1, many rows.
  add_norm_cases("stories260k", 66, 64);
  add_norm_cases("smollm2_135m", 67, 576);
  add_norm_cases("llama32_1b", 9, 2048);
  add_norm_cases("llama31_8b", 5, 4096);
  add_norm_cases("t1", 1, 576);
  add_norm_cases("many_rows", 300, 64);
  add_rmsnorm_backward_case("wide_dw_global", 65, 12300);
  add_head_norm_cases("qwen3_8b", 5, 32, 8, 128);
  add_head_norm_cases("odd", 67, 3, 1, 40);
  add_head_norm_cases("many_rows", 700, 4, 2, 64);  // more head rows than one column-sum chunk
  // RoPE on the q heads of a qkv row (stride = qkv row).
  add_rope_case("stories260k", 66, 33, 8, 8, 128);
  add_rope_case("smollm2_135m", 67, 67, 9, 64, 960);
  add_rope_case("llama32_1b_kv", 9, 9, 8, 64, 3072);
  add_rope_case("llama31_8b", 5, 5, 32, 128, 6144);
  // SwiGLU hidden sizes; GELU over the same element counts (+3, odd).
  add_activation_cases("stories260k", 66, 172);
  add_activation_cases("smollm2_135m", 7, 1536);
  add_activation_cases("llama32_1b", 5, 8192);
  add_activation_cases("llama31_8b", 3, 14336);
  add_gemma_elementwise_cases("gemma3_1b", 5, 6912);
  // Embeddings (the table's vocabulary is cut to keep the reference quick: the lookup does not
  // depend on it); repeated tokens; learned positions for GPT-2-like models.
  add_embedding_cases("stories260k", 512, 66, 33, 64, false);
  add_embedding_cases("gpt2_like_wpe", 1000, 67, 33, 768, true);
  add_embedding_cases("smollm2_135m", 4096, 67, 67, 576, false);
  add_embedding_cases("llama31_8b", 2048, 5, 5, 4096, false);
  add_embedding_cases("many_rows", 300, 700, 350, 64, true);
  // Bias (GPT-2 style) on a part of a wider row, and over many rows.
  add_bias_cases("part_of_row", 33, 576, 960);
  add_bias_cases("gpt2_qkv", 200, 2304, 2304);
  add_bias_cases("llama31_8b", 3, 4096, 4096);
  // Cross-entropy: stories260K, SmolLM2 (49,152), Llama 3 (128,256), Qwen (151,936).
  add_cross_entropy_case("stories260k", 5, 512, true);
  add_cross_entropy_case("smollm2_49152", 3, 49152, true);
  add_cross_entropy_case("llama3_128256", 2, 128256, true);
  add_cross_entropy_case("qwen_151936", 2, 151936, true);
  add_cross_entropy_case("loss_only_49152", 3, 49152, false);
  // GPT-2's 50,257 logits a row, laid out 50,304 apart as the model pads them.
  add_cross_entropy_case("gpt2_padded_50257_50304", 3, 50257, true, 50304);
  add_cross_entropy_case("gpt2_padded_loss_only_50257_50304", 2, 50257, false, 50304);
  // Attention: the four models' head layouts, odd T, T = 1, GQA ratios 1 / 3 / 4 / 8, head dims
  // 8 / 16 / 32 / 64 / 96 / 128.
  add_attention_cases("stories260k", 2, 33, 8, 4, 8);
  add_attention_cases("smollm2_135m", 1, 67, 9, 3, 64);
  add_attention_cases("llama32_1b", 1, 97, 32, 8, 64);
  add_attention_cases("llama31_8b", 1, 65, 32, 8, 128);
  add_attention_cases("t1", 3, 1, 9, 3, 64);
  add_attention_cases("mha_d32", 2, 40, 4, 4, 32);
  add_attention_document_cases("smollm2_135m", 2, 150, 9, 3, 64);
  add_attention_cases("gqa8_d16", 1, 50, 8, 1, 16);
  add_attention_cases("d96", 1, 33, 4, 2, 96);
  // bf16 compute's attention (cuDNN on a GPU): the head dims 64 / 80 / 128 of the presets, GQA,
  // T = 1, odd T, a longer T over two sequences.
  add_attention_cases("smollm2_135m", 1, 67, 9, 3, 64, GemmDtype::kBF16);
  add_attention_cases("llama31_8b", 1, 65, 32, 8, 128, GemmDtype::kBF16);
  add_attention_cases("d80_mha", 1, 70, 4, 4, 80, GemmDtype::kBF16);
  add_attention_cases("t1", 3, 1, 9, 3, 64, GemmDtype::kBF16);
  add_attention_cases("gqa4_t300", 2, 300, 8, 2, 128, GemmDtype::kBF16);
  // Sliding windows (Gemma 3's local layers): shorter than a 32-key tile, across tiles, of 1.
  add_attention_cases("window7", 2, 90, 8, 2, 64, GemmDtype::kF32, 7);
  add_attention_cases("window40", 1, 130, 4, 4, 32, GemmDtype::kF32, 40);
  add_attention_cases("window1", 1, 33, 4, 2, 16, GemmDtype::kF32, 1);
  add_attention_cases("window40", 1, 130, 4, 4, 32, GemmDtype::kBF16, 40);  // cuDNN's sliding window
  add_attention_cases("gqa4_t300_window128", 2, 300, 8, 2, 128, GemmDtype::kBF16, 128);
  // Packed documents through cuDNN's ragged batch (6 documents: a graph batch of 8 with two
  // empty; the longest of 93 rows: a graph length of 128), and with a window of 128 inside the
  // documents of 193 and 190 rows (a graph length of 256, below T = 300).
  add_attention_document_cases("smollm2_135m", 2, 150, 9, 3, 64, GemmDtype::kBF16);
  add_attention_document_cases("gqa4_t300_window128", 2, 300, 8, 2, 128, GemmDtype::kBF16, 128);
  // Gemma 3's layers: head_dim 256, scores scaled by query_pre_attn_scalar (here 224, not 256, so
  // the scale is not head_dim's), a window of 50, fp32 and cuDNN's bf16.
  add_attention_cases("gemma3_window50_scalar224", 1, 70, 4, 1, 256, GemmDtype::kF32, 50, 224);
  add_attention_cases("gemma3_window50_scalar224", 1, 70, 4, 1, 256, GemmDtype::kBF16, 50, 224);
  // ... and with the output stored as bf16, as the model stores it under bf16 compute.
  add_attention_bf16out_cases("smollm2_135m", 1, 67, 9, 3, 64);
  add_attention_bf16out_cases("llama31_8b", 1, 65, 32, 8, 128);
  add_attention_bf16out_cases("d80_mha", 1, 70, 4, 4, 80);
  add_attention_bf16out_cases("t1", 3, 1, 9, 3, 64);
  add_attention_bf16out_cases("gqa4_t300", 2, 300, 8, 2, 128);
  add_decode_case("stories260k", 8, 4, 8, 1, 40);
  add_decode_case("smollm2_135m", 9, 3, 64, 3, 100);
  add_decode_case("llama31_8b", 32, 8, 128, 2, 77);
  add_decode_case("first_token", 9, 3, 64, 1, 0);
  add_decode_case("window7", 32, 8, 128, 2, 77, 7);
  add_decode_case("gemma3_window50_scalar224", 4, 1, 256, 2, 77, 50, 224);
  // GEMMs: projections forward (C = X W^T), input gradients (dX = dY W), weight gradients
  // (dW += dY^T X, accumulate), strided A (a view into qkv rows), T = 1, the 128,256 LM head.
  using T = Trans;
  add_matmul_case("f32_stories260k_qkv", GemmDtype::kF32, GemmShape{33, 128, 64, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_case("bf16_smollm2_qkv", GemmDtype::kBF16, GemmShape{67, 960, 576, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_case("bf16_smollm2_down_dx", GemmDtype::kBF16, GemmShape{67, 1536, 576, 0, 0, 0, T::kN, T::kN}, false);
  add_matmul_case("bf16_smollm2_down_dw_acc", GemmDtype::kBF16, GemmShape{576, 1536, 67, 0, 0, 0, T::kT, T::kN},
                  true);
  add_matmul_case("f32_strided_a", GemmDtype::kF32, GemmShape{9, 64, 64, 960, 0, 80, T::kN, T::kT}, true);
  add_matmul_case("bf16_llama32_1b_gate_up", GemmDtype::kBF16, GemmShape{5, 16384, 2048, 0, 0, 0, T::kN, T::kT},
                  false);
  add_matmul_case("bf16_llama31_8b_down_t1", GemmDtype::kBF16, GemmShape{1, 4096, 14336, 0, 0, 0, T::kN, T::kT},
                  false);
  add_matmul_case("f16_llama31_8b_o", GemmDtype::kF16, GemmShape{3, 4096, 4096, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_case("bf16_llama3_lm_head", GemmDtype::kBF16, GemmShape{2, 128256, 2048, 0, 0, 0, T::kN, T::kT}, false);
  // GPT-2's head over logits rows padded to 50,304 (logits_row_stride): forward, dgrad, wgrad;
  // the model dimension cut to 128 to keep the CPU reference quick (the padding is in V).
  add_matmul_bf16_out_case("gpt2_vocab_lm_head_padded_ldc", GemmDtype::kBF16,
                           GemmShape{3, 50257, 128, 0, 0, 50304, T::kN, T::kT}, false);
  add_matmul_case("bf16_gpt2_vocab_lm_head_dgrad_padded_lda", GemmDtype::kBF16,
                  GemmShape{3, 128, 50257, 50304, 128, 0, T::kN, T::kN}, false);
  add_matmul_case("bf16_gpt2_vocab_lm_head_wgrad_padded_lda_acc", GemmDtype::kBF16,
                  GemmShape{50257, 128, 3, 50304, 128, 128, T::kT, T::kN}, true);
  // bf16 GEMM outputs: the MLP's in-projection (SmolLM2's gate|up; GPT-2's up with its bias).
  add_matmul_bf16_out_case("smollm2_gate_up", GemmDtype::kBF16, GemmShape{67, 3072, 576, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_bf16_out_case("gpt2_up_bias", GemmDtype::kBF16, GemmShape{33, 3072, 768, 0, 0, 0, T::kN, T::kT}, true);
  // ... added to the residual stream: SmolLM2's down projection, GPT-2's out projection (bias).
  add_matmul_bf16_out_case("smollm2_down_residual", GemmDtype::kBF16, GemmShape{67, 576, 1536, 0, 0, 0, T::kN, T::kT},
                           false, Residual::kOther);
  add_matmul_bf16_out_case("gpt2_o_residual_bias", GemmDtype::kBF16, GemmShape{33, 768, 768, 0, 0, 0, T::kN, T::kT},
                           true, Residual::kOther);
  add_matmul_bf16_out_case("smollm2_o_residual_in_place", GemmDtype::kBF16,
                           GemmShape{67, 576, 576, 0, 0, 0, T::kN, T::kT}, false, Residual::kInPlace);
  // Biases in the GEMMs (cuBLASLt's epilogues on a GPU): Qwen2.5-0.5B's qkv (896 -> 1152, W stored
  // (out, in)) into its bf16 output; fp32 outputs (fp32 compute, and fp32 activations under bf16
  // compute), one onto the residual; bias gradients with the weight gradients, dy as A (Qwen) and
  // as B (GPT-2's Conv1D), dW added whole, accumulated or written, and GPT-2's qkv with an
  // fp32 dy narrowed for its bf16 GEMM.
  add_matmul_bf16_out_case("qwen25_qkv_bias", GemmDtype::kBF16, GemmShape{67, 1152, 896, 0, 0, 0, T::kN, T::kT}, true);
  add_matmul_bias_case("f32_gpt2_qkv", GemmDtype::kF32, GemmShape{33, 2304, 768, 0, 0, 0, T::kN, T::kN}, false);
  add_matmul_bias_case("bf16_qwen25_qkv", GemmDtype::kBF16, GemmShape{67, 1152, 896, 0, 0, 0, T::kN, T::kT}, false);
  add_matmul_bias_case("bf16_gpt2_o_residual", GemmDtype::kBF16, GemmShape{33, 768, 768, 0, 0, 0, T::kN, T::kN}, true);
  add_matmul_bias_grad_case("qwen25_qkv_a_bf16", GemmDtype::kBF16, BiasGradOf::kA, 67, 1152, 896, GradInto::kAddProduct);
  add_matmul_bias_grad_case("qwen25_qkv_a_f32", GemmDtype::kF32, BiasGradOf::kA, 67, 1152, 896, GradInto::kAccumulate);
  add_matmul_bias_grad_case("qwen25_qkv_a_bf16_written", GemmDtype::kBF16, BiasGradOf::kA, 67, 1152, 896,
                            GradInto::kOverwrite);
  add_matmul_bias_grad_case("gpt2_up_b_bf16", GemmDtype::kBF16, BiasGradOf::kB, 200, 3072, 768, GradInto::kAccumulate);
  add_matmul_bias_grad_case("gpt2_qkv_b_bf16_dy_f32", GemmDtype::kBF16, BiasGradOf::kB, 33, 2304, 768,
                            GradInto::kAddProduct, true);
  add_copy_cases();
  add_fp8_cases();
  add_fp4_cases(false);
  return g_cases;
}

// ---- comparison --------------------------------------------------------------------------------

// The CUDA rows print each array's measured error (the GPU check's log keeps the figures).
bool g_print_errors = false;

void expect_same(const Outputs& ref, const Outputs& got, const Tolerance& tol) {
  ASSERT_EQ(ref.arrays.size(), got.arrays.size());
  for (size_t k = 0; k < ref.arrays.size(); ++k) {
    const auto& [name, r] = ref.arrays[k];
    const auto& g = got.arrays[k].second;
    ASSERT_EQ(r.size(), g.size()) << name;
    if (tol.rel == 0.0) {
      size_t first = r.size(), mismatches = 0;
      for (size_t i = 0; i < r.size(); ++i) {
        if (std::memcmp(&r[i], &g[i], 4) != 0) {
          first = std::min(first, i);
          ++mismatches;
        }
      }
      EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << r.size()
                                << " elements differ in bits (class " << tol.name << "); first at " << first << ": "
                                << (first < r.size() ? r[first] : 0.0f) << " vs " << (first < g.size() ? g[first] : 0.0f);
      continue;
    }
    double scale = 0.0, worst = 0.0;
    size_t worst_at = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (std::isfinite(r[i])) scale = std::max(scale, double(std::fabs(r[i])));
    }
    for (size_t i = 0; i < r.size(); ++i) {
      const bool both_nan = std::isnan(r[i]) && std::isnan(g[i]);
      const double err = both_nan ? 0.0 : (r[i] == g[i] ? 0.0 : std::fabs(double(r[i]) - double(g[i])));
      if (!(err <= worst)) {  // NaN errors count as worst
        worst = std::isnan(err) ? INFINITY : err;
        worst_at = i;
      }
    }
    if (g_print_errors) {
      std::printf("  %s: max error %.3g of scale %.3g = %.3g (class %s allows %.3g)\n", name.c_str(), worst, scale,
                  scale > 0 ? worst / scale : 0.0, tol.name, tol.rel);
    }
    EXPECT_LE(worst, tol.rel * scale) << name << ": max error " << worst << " at " << worst_at << " ("
                                      << r[worst_at] << " vs " << g[worst_at] << "), allowed " << tol.rel
                                      << " x scale " << scale << " (class " << tol.name << ")";
  }
  ASSERT_EQ(ref.scalars.size(), got.scalars.size());
  for (size_t k = 0; k < ref.scalars.size(); ++k) {
    const double r = ref.scalars[k].second, g = got.scalars[k].second;
    if (tol.rel == 0.0) {
      EXPECT_EQ(std::memcmp(&r, &g, 8), 0) << ref.scalars[k].first << ": " << r << " vs " << g;
    } else {
      EXPECT_LE(std::fabs(r - g), kLossSumRel * std::max(1.0, std::fabs(r))) << ref.scalars[k].first << ": " << r
                                                                             << " vs " << g;
    }
  }
}

Outputs run_case(const Case& c, Backend& backend, int threads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  Rng rng(seed_of(c.name));
  Outputs out;
  {
    Arena arena(backend);
    out = c.run(arena, rng);
  }
  omp_set_num_threads(saved);
  return out;
}

std::string case_name(const testing::TestParamInfo<size_t>& info) { return cases()[info.param].name; }

std::vector<size_t> case_indices() {
  std::vector<size_t> v(cases().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

class CpuThreads : public testing::TestWithParam<size_t> {};
class Cuda : public testing::TestWithParam<size_t> {};

// The CPU reference at 1 thread against itself at 2, 3 and 5: bitwise for every op and output.
// Odd counts matter: a GEMM split by thread count would cut its rows or its reduction unevenly.
TEST_P(CpuThreads, BitwiseAcrossThreadCounts) {
  const Case& c = cases()[GetParam()];
  Backend& cpu = backend_for(Device::cpu());
  const Outputs one = run_case(c, cpu, 1);
  for (int threads : {2, 3, 5}) {
    SCOPED_TRACE(testing::Message() << "1 thread vs " << threads);
    expect_same(one, run_case(c, cpu, threads), tolerance_of(Tol::kBitwise));
  }
}

TEST_P(Cuda, MatchesCpuWithinItsClass) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: the CUDA half of the parity table did not run";
  const Case& c = cases()[GetParam()];
  const Outputs ref = run_case(c, backend_for(Device::cpu()), omp_get_max_threads());
  Backend& gpu = backend_for(Device::cuda(0));
  const Outputs got = run_case(c, gpu, omp_get_max_threads());
  gpu.synchronize();
  g_print_errors = true;
  expect_same(ref, got, tolerance_of(c.tol));
  g_print_errors = false;
  // Run-to-run determinism on the device: a second run repeats the first bit for bit.
  const Outputs again = run_case(c, gpu, omp_get_max_threads());
  expect_same(got, again, tolerance_of(Tol::kBitwise));
}

INSTANTIATE_TEST_SUITE_P(NnOps, CpuThreads, testing::ValuesIn(case_indices()), case_name);
INSTANTIATE_TEST_SUITE_P(NnOps, Cuda, testing::ValuesIn(case_indices()), case_name);

// Not a parity row: a backward whose gradients are stored in two types has no kernel; it is
// refused before anything is written, with the op and each array's storage named.
TEST(NnOpsStorage, MixedGradientStorageIsRefusedNamingTheArrays) {
  NnOps& ops = backend_for(Device::cpu()).nn();
  std::vector<float> dx(8, 1.0f), dout(8, 1.0f), x(8, 1.0f), w(4, 1.0f), rstd(2, 1.0f), dw(4, 0.0f);
  std::vector<uint16_t> dx16(8, 0x3f80);
  const std::vector<uint16_t> before = dx16;
  try {
    ops.rmsnorm_backward(ActRef::bf16(dx16.data()), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), 2, 4);
    ADD_FAILURE() << "a bf16 dx beside an fp32 dout was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("rmsnorm_backward: these arrays are stored alike"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("dx bf16, dout fp32"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dx16, before);
  EXPECT_EQ(dw, std::vector<float>(4, 0.0f));
  std::vector<float> gu(16, 1.0f);
  try {
    ops.swiglu_backward(gu.data(), ActRef::bf16(dx16.data()), gu.data(), 2, 4);
    ADD_FAILURE() << "a bf16 dact beside fp32 dgu and gu was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("dgu fp32, dact bf16, gu fp32"), std::string::npos) << e.what();
  }
}

// Not a parity row: the CUDA ops' workspace is device memory, so the device's memory tracker
// must count it (NnOps::workspace_bytes, as activations). A decode whose scores need more floats
// than the workspace holds makes it grow; the tracker's activations change by exactly the growth.
TEST(CudaOpsWorkspace, IsChargedToTheDeviceTracker) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  Backend& gpu = backend_for(Device::cuda(0));
  MemoryTracker& tracker = memory_tracker(gpu.device());
  const auto activations = [&] { return tracker.snapshot().current_bytes[size_t(MemoryCategory::kActivations)]; };
  Rng rng(91);
  const int64_t hq = 16, hkv = 2, d = 8;
  const AttentionShape s{1, 1, hq, hkv, d};
  // Decode scores: hq floats per cached position (attention_decode_scratch_floats).
  const int64_t positions = gpu.nn().workspace_bytes() / 4 / hq + 1000;
  Arena a(gpu);
  const float* qkv = a.put(rng.floats(s.qkv_stride()));
  const float* kc = a.put(rng.floats(positions * hkv * d));
  const float* vc = a.put(rng.floats(positions * hkv * d));
  float* out = a.put(std::vector<float>(size_t(hq * d)));
  const int64_t held_before = gpu.nn().workspace_bytes(), counted_before = activations();
  a.nn().attention_decode(s, out, qkv, 1, positions - 1, kc, vc);
  gpu.synchronize();
  const int64_t held = gpu.nn().workspace_bytes();
  EXPECT_GE(held, positions * hq * 4) << "the workspace did not grow to the decode's scores";
  EXPECT_GT(held, held_before);
  EXPECT_EQ(activations() - counted_before, held - held_before)
      << "the tracker's activations did not follow the workspace from " << held_before << " to " << held << " bytes";
}

TEST(NnOpsParityTable, HasOneRowPerOpAndShape) {
  std::vector<std::string> names;
  for (const Case& c : cases()) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "duplicate row names";
  std::printf("parity table: %zu rows\n", names.size());
}

// Not a parity row: FP8 against BF16 GEMM throughput at Llama-3.1-8B's projection shapes (8,192
// tokens; qkv, gate/up, down), forward form C = X W^T. Disabled by default (it needs ~3 GB of
// device memory and says nothing on a CPU); tools/gpu/check.sh runs it (--gtest_also_run_disabled_tests,
// FARTHING_FP8_PLAN_LOG=1, so its log says whether each FP8 GEMM ran on cuBLASLt's FP8 kernels
// or fell back). Inputs: 2^20 random values repeated (tensor-core timing hardly depends on them,
// but all-zero inputs would understate the power draw). Times exclude quantization.
TEST(Fp8GemmThroughput, DISABLED_Llama31_8bShapes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  Backend& gpu = backend_for(Device::cuda(0));
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  const int64_t m = 8192;
  const Shape shapes[] = {{"qkv", 6144, 4096}, {"gate_up", 14336, 4096}, {"down", 4096, 14336}};
  Rng rng(20260118);
  for (const Shape& sh : shapes) {
    Arena a(gpu);
    NnOps& nn = a.nn();
    const int64_t pattern_n = int64_t(1) << 20;
    const float* pattern = a.put(rng.floats(pattern_n));
    const auto filled = [&](int64_t count) {
      auto* p = static_cast<float*>(a.raw(size_t(count) * 4));
      for (int64_t off = 0; off < count; off += pattern_n) nn.copy(p + off, pattern, std::min(pattern_n, count - off));
      return p;
    };
    const float* x = filled(m * sh.k);
    const float* w = filled(sh.n * sh.k);
    auto* x16 = static_cast<uint16_t*>(a.raw(size_t(m * sh.k) * 2));
    auto* w16 = static_cast<uint16_t*>(a.raw(size_t(sh.n * sh.k) * 2));
    nn.narrow(GemmDtype::kBF16, x16, x, m * sh.k);
    nn.narrow(GemmDtype::kBF16, w16, w, sh.n * sh.k);
    auto* c = static_cast<float*>(a.raw(size_t(m * sh.n) * 4));
    void* ws = a.raw(size_t(nn.fp8_matmul_workspace_bytes(m * sh.k, sh.n * sh.k, true)));
    const auto operand = [&](const float* src, int64_t rows, Fp8Tiling tiling) {
      Fp8QuantizeArgs q;
      q.x_f32 = src;
      q.rows = rows;
      q.cols = sh.k;
      q.tiling = tiling;
      q.codes = static_cast<uint8_t*>(a.raw(size_t(rows * sh.k)));
      q.scale_inv = static_cast<float*>(a.raw(size_t(numerics::fp8_scale_count(tiling, rows, sh.k)) * 4));
      nn.fp8_quantize(q);
      Fp8Operand op;
      op.codes = q.codes;
      op.scale_inv = q.scale_inv;
      op.rows = rows;
      op.cols = sh.k;
      op.tiling = tiling;
      return op;
    };
    const Fp8Operand xt = operand(x, m, Fp8Tiling::kTensor), wt = operand(w, sh.n, Fp8Tiling::kTensor);
    const Fp8Operand xb = operand(x, m, Fp8Tiling::kRow1x128), wb = operand(w, sh.n, Fp8Tiling::kBlock128);
    const GemmShape g{m, sh.n, sh.k, 0, 0, 0, Trans::kN, Trans::kT};
    const auto tflops = [&](const std::function<void()>& run) {
      run();  // plans and warms up
      gpu.synchronize();
      const int reps = 10;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) run();
      gpu.synchronize();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
      return 2.0 * double(m) * double(sh.n) * double(sh.k) / s * 1e-12;
    };
    const double bf16 = tflops([&] { nn.matmul(GemmDtype::kBF16, g, x16, w16, c, false); });
    const double fp8_tensor = tflops([&] { nn.matmul_fp8(g, xt, wt, c, false, ws); });
    const double fp8_block = tflops([&] { nn.matmul_fp8(g, xb, wb, c, false, ws); });
    std::printf("fp8 gemm %-8s m=%lld n=%lld k=%lld: bf16 %.1f TFLOP/s, fp8 per-tensor %.1f (x%.2f), fp8 1x128/128x128 %.1f (x%.2f)\n",
                sh.name, (long long)m, (long long)sh.n, (long long)sh.k, bf16, fp8_tensor, fp8_tensor / bf16, fp8_block,
                fp8_block / bf16);
  }
}

// The tolerance path only runs against a GPU; check here that it can fail. (Globals: gtest's
// EXPECT_NONFATAL_FAILURE cannot see locals.)
Outputs g_ref, g_off;
TEST(NnOpsParityTable, ToleranceComparisonFailsOutsideItsClass) {
  g_ref.add("x", {1.0f, -2.0f, 0.5f});
  g_off = g_ref;
  g_off.arrays[0].second[2] += 4e-5f;  // scale 2, fp32-reduction class allows 2e-5
  EXPECT_NONFATAL_FAILURE(expect_same(g_ref, g_off, tolerance_of(Tol::kF32Reduction)), "max error");
  g_off.arrays[0].second[2] = std::nanf("");
  EXPECT_NONFATAL_FAILURE(expect_same(g_ref, g_off, tolerance_of(Tol::kF32Reduction)), "max error");
  g_off.arrays[0].second[2] = 0.5f + 1e-5f;  // inside the class: passes, but not bitwise
  expect_same(g_ref, g_off, tolerance_of(Tol::kF32Reduction));
  EXPECT_NONFATAL_FAILURE(expect_same(g_ref, g_off, tolerance_of(Tol::kBitwise)), "differ in bits");
}

// Under tests/support/with_onednn_isa_cap.sh: the cap took effect in this process. oneDNN says it
// dispatches to the capped ISA, and the GEMMs the CpuThreads rows run name no ISA above it
// (uncapped, an AVX-512-BF16 machine's bf16 GEMM of 48 x 24 x 40 is brg:avx512_core_bf16, an AMX
// machine's brg:avx512_core_amx). Skipped without a cap.
int onednn_isa_rank(const std::string& isa) {  // the caps' order; higher ranks run more instructions
  static const std::pair<const char*, int> kRanks[] = {
      {"avx2", 2},        {"avx2_vnni", 3},        {"avx512_core", 4},
      {"avx512_core_vnni", 5}, {"avx512_core_bf16", 6}, {"avx512_core_amx", 8}};
  std::string lower;
  for (char c : isa) lower += char(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [name, rank] : kRanks) {
    if (lower == name) return rank;
  }
  return lower.find("amx") != std::string::npos ? 8 : lower.rfind("avx512", 0) == 0 ? 5 : 1;
}

TEST(OneDnnIsaCap, TheCapTookEffect) {
  const char* cap = std::getenv("FARTHING_ONEDNN_ISA_CAP");  // the cap with_onednn_isa_cap.sh set
  if (cap == nullptr) GTEST_SKIP() << "not under with_onednn_isa_cap.sh: nothing is capped";
  EXPECT_EQ(kernels::onednn_cpu_isa_cpu(), cap) << "oneDNN does not dispatch to the cap it was given";
  for (const auto& [dtype, shape] : {std::pair{GemmDtype::kF32, GemmShape{256, 256, 256}},
                                     std::pair{GemmDtype::kBF16, GemmShape{256, 256, 256}},
                                     std::pair{GemmDtype::kBF16, GemmShape{48, 24, 40}}}) {
    const std::string impl = kernels::matmul_impl_name_cpu(dtype, shape);
    std::printf("  %s GEMM capped at %s: %s\n", dtype == GemmDtype::kF32 ? "f32" : "bf16", cap,
                impl.c_str());
    // Implementation names are "kind:isa" (brg:avx512_core) or name no ISA (gemm:jit).
    const std::string isa = impl.substr(impl.rfind(':') + 1);
    if (isa.rfind("avx", 0) == 0 || isa.find("amx") != std::string::npos) {
      EXPECT_LE(onednn_isa_rank(isa), onednn_isa_rank(cap)) << impl << " runs an ISA above the cap " << cap;
    }
  }
}

}  // namespace
}  // namespace farthing

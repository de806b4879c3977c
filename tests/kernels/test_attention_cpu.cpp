// test_attention_cpu.cpp — blocked causal GQA attention (forward, backward) against a plain
// double-precision loop, with T spanning several 64-row query blocks and a partial last one
// (the model goldens use short sequences, so this is where the blocking is exercised); with no
// window, and with sliding windows (AttentionShape::window) of 1, of 37 keys (across block edges)
// and of 64; and decoding over a KV cache with the same window against the forward's rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/attention_cpu.h"
#include "tests/support/test_support.h"

namespace farthing::kernels {
namespace {

class AttentionCpu : public ::testing::TestWithParam<int64_t> {};

TEST_P(AttentionCpu, BlockedForwardAndBackwardMatchAPlainLoop) {
  AttentionShape s{2, 150, 6, 2, 16};
  s.window = GetParam();
  const int64_t T = s.seq, D = s.head_dim, Hq = s.q_heads, Hkv = s.kv_heads, S = s.qkv_stride();
  const int64_t group = Hq / Hkv, rows = s.batch * T;
  test::SplitMix64 rng(9);
  std::vector<float> qkv(size_t(rows * S)), dout(size_t(rows * Hq * D));
  for (auto& v : qkv) v = float(rng.normal());
  for (auto& v : dout) v = float(rng.normal());
  std::vector<float> out(size_t(rows * Hq * D)), lse(size_t(s.batch * Hq * T)), dqkv(size_t(rows * S));
  std::vector<float> scratch(size_t(2 * s.batch * Hq * T * D));
  attention_forward_cpu(s, out.data(), lse.data(), qkv.data());
  attention_backward_cpu(s, dqkv.data(), scratch.data(), dout.data(), out.data(), lse.data(), qkv.data());

  std::vector<double> ref_dqkv(size_t(rows * S), 0.0);
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / group;
      auto q = [&](int64_t t, int64_t d) { return double(qkv[size_t((b * T + t) * S + h * D + d)]); };
      auto k = [&](int64_t t, int64_t d) { return double(qkv[size_t((b * T + t) * S + (Hq + kh) * D + d)]); };
      auto v = [&](int64_t t, int64_t d) { return double(qkv[size_t((b * T + t) * S + (Hq + Hkv + kh) * D + d)]); };
      for (int64_t i = 0; i < T; ++i) {
        // Keys lo .. i: all of them, or the window's last ones.
        const int64_t lo = s.window > 0 ? std::max<int64_t>(0, i - s.window + 1) : 0;
        std::vector<double> p(size_t(i + 1), 0.0);
        double m = -1e300, sum = 0.0;
        for (int64_t j = lo; j <= i; ++j) {
          double sc = 0.0;
          for (int64_t d = 0; d < D; ++d) sc += q(i, d) * k(j, d);
          p[size_t(j)] = sc * scale;
          m = std::max(m, p[size_t(j)]);
        }
        for (int64_t j = lo; j <= i; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
        for (auto& x : p) x /= sum;
        const float* go = dout.data() + (b * T + i) * Hq * D + h * D;
        std::vector<double> o(size_t(D), 0.0);
        for (int64_t j = lo; j <= i; ++j)
          for (int64_t d = 0; d < D; ++d) o[size_t(d)] += p[size_t(j)] * v(j, d);
        for (int64_t d = 0; d < D; ++d) {
          ASSERT_NEAR(out[size_t((b * T + i) * Hq * D + h * D + d)], o[size_t(d)], 2e-5) << "out b" << b << " h" << h << " t" << i;
        }
        ASSERT_NEAR(lse[size_t((b * Hq + h) * T + i)], m + std::log(sum), 2e-5);
        double di = 0.0;
        for (int64_t d = 0; d < D; ++d) di += double(go[d]) * o[size_t(d)];
        for (int64_t j = lo; j <= i; ++j) {
          double dp = 0.0;
          for (int64_t d = 0; d < D; ++d) dp += double(go[d]) * v(j, d);
          const double ds = p[size_t(j)] * (dp - di) * scale;
          for (int64_t d = 0; d < D; ++d) {
            ref_dqkv[size_t((b * T + i) * S + h * D + d)] += ds * k(j, d);
            ref_dqkv[size_t((b * T + j) * S + (Hq + kh) * D + d)] += ds * q(i, d);
            ref_dqkv[size_t((b * T + j) * S + (Hq + Hkv + kh) * D + d)] += p[size_t(j)] * double(go[d]);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < ref_dqkv.size(); ++i) {
    ASSERT_NEAR(dqkv[i], ref_dqkv[i], 1e-4 + 1e-4 * std::fabs(ref_dqkv[i])) << "dqkv element " << i;
  }

  // Decoding sequence 1 over a KV cache, in two chunks (a prompt, then one row at a time), with
  // the same window: each row's output is the forward's (other summation orders: within 2e-5).
  std::vector<float> k_cache(size_t(T * Hkv * D)), v_cache(size_t(T * Hkv * D)), dec(size_t(Hq * D * T));
  const float* seq1 = qkv.data() + T * S;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < Hkv * D; ++e) {
      k_cache[size_t(t * Hkv * D + e)] = seq1[t * S + Hq * D + e];
      v_cache[size_t(t * Hkv * D + e)] = seq1[t * S + (Hq + Hkv) * D + e];
    }
  }
  const int64_t prompt = 70;
  attention_decode_cpu(s, dec.data(), seq1, prompt, 0, k_cache.data(), v_cache.data());
  for (int64_t t = prompt; t < T; ++t) {
    attention_decode_cpu(s, dec.data() + t * Hq * D, seq1 + t * S, 1, t, k_cache.data(), v_cache.data());
  }
  for (int64_t e = 0; e < T * Hq * D; ++e) {
    ASSERT_NEAR(dec[size_t(e)], out[size_t(T * Hq * D + e)], 2e-5) << "decoded row " << e / (Hq * D);
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, AttentionCpu, ::testing::Values(0, 1, 37, 64),
                         [](const ::testing::TestParamInfo<int64_t>& i) { return "window" + std::to_string(i.param); });

}  // namespace
}  // namespace farthing::kernels

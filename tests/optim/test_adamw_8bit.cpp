// test_adamw_8bit.cpp — 8-bit block-wise moments against an fp32 twin fed the same gradients
// for 100 steps (bitsandbytes' test pattern), and save -> load of the quantized state.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "framework/optim/adamw.h"
#include "framework/optim/optim_state_io.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

constexpr int64_t kN = 2 * 65536 + 300;  // a short last block
constexpr int kSteps = 100;

optim::OptimizerConfig config(optim::StateFormat format) {
  optim::OptimizerConfig c;
  c.groups = {{"g", {1e-3, 0.9, 0.999, 1e-8, 0.0}, format}};
  c.ranges = {{"w", 0, uint64_t(kN), 0}};
  return c;
}

// max over elements of |a - b| / (absmax of b's 256-block): the quantization error in units
// of the block's scale, which is what 8-bit blocks can promise.
double max_block_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t start = 0; start < b.size(); start += 256) {
    const size_t end = std::min(b.size(), start + 256);
    double absmax = 0.0;
    for (size_t i = start; i < end; ++i) absmax = std::max(absmax, std::fabs(double(b[i])));
    if (absmax == 0.0) continue;
    for (size_t i = start; i < end; ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / absmax);
  }
  return worst;
}

// mean |a - b| / mean |b|: the parameters' mean relative error. (bitsandbytes' elementwise
// mean of |a - b| / (|b| + 1e-9) is dominated by the few weights that pass near zero, and
// swings by 10x from step to step; it is printed but not bounded.)
double mean_rel_error(const std::vector<float>& a, const std::vector<float>& b, double* elementwise) {
  double sum_err = 0.0, sum_ref = 0.0, sum_rel = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    sum_err += d;
    sum_ref += std::fabs(double(b[i]));
    sum_rel += d / (std::fabs(double(b[i])) + 1e-9);
  }
  *elementwise = sum_rel / double(a.size());
  return sum_err / sum_ref;
}

TEST(AdamW8bit, TracksAnFp32TwinAndRoundTripsItsState) {
  optim::AdamW exact(config(optim::StateFormat::kF32), {{0, uint64_t(kN)}});
  optim::AdamW q8(config(optim::StateFormat::kBlock8), {{0, uint64_t(kN)}});
  ShardBuffers a(kN, DType::kF32), b(kN, DType::kF32);
  const std::vector<float> init = normal_values(21, size_t(kN), 0.1);
  set_weights_rn(a, init.data());
  set_weights_rn(b, init.data());
  const Tensor init_t(const_cast<float*>(init.data()), DType::kF32, Shape{kN});
  exact.init_master(0, init_t);
  q8.init_master(0, init_t);

  std::unique_ptr<optim::AdamW> restored;
  std::unique_ptr<ShardBuffers> restored_buffers;
  std::vector<float> m32(kN), v32(kN), m8(kN), v8(kN), p32(kN), p8(kN);
  double worst_m = 0.0, worst_v = 0.0, worst_p = 0.0;
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<float> g = normal_values(1000 + uint64_t(t), size_t(kN), 0.01);
    std::memcpy(a.g_f32(), g.data(), size_t(kN) * 4);
    std::memcpy(b.g_f32(), g.data(), size_t(kN) * 4);
    step_once(exact, {&a});
    step_once(q8, {&b});
    if (restored) {
      std::memcpy(restored_buffers->g_f32(), g.data(), size_t(kN) * 4);
      step_once(*restored, {restored_buffers.get()});
    }
    exact.moments_to_f32(0, m32.data(), v32.data());
    q8.moments_to_f32(0, m8.data(), v8.data());
    std::memcpy(p32.data(), exact.master(0), size_t(kN) * 4);
    std::memcpy(p8.data(), q8.master(0), size_t(kN) * 4);
    const double err_m = max_block_error(m8, m32), err_v = max_block_error(v8, v32);
    double err_p_elementwise = 0.0;
    const double err_p = mean_rel_error(p8, p32, &err_p_elementwise);
    worst_m = std::max(worst_m, err_m);
    worst_v = std::max(worst_v, err_v);
    worst_p = std::max(worst_p, err_p);
    if (t == 1 || t % 10 == 0) {
      std::printf("step %3d: m max error %.4f of block absmax, v %.4f; params mean rel error %.3g "
                  "(bitsandbytes' elementwise mean %.3g)\n", t, err_m, err_v, err_p, err_p_elementwise);
    }
    // Bounds: measured over these 100 steps (worst printed at the end), then set with about
    // 1.8-2x headroom. The error grows for the first ~30 steps and then levels off, since each
    // step's quantization error decays with beta1 (m) or beta2 (v):
    // m: one quantization with the signed map errs by up to ~half its widest gap near |x| = 1
    //    (~0.015 of the block absmax; 0.0070 measured at step 1); fed back through beta1 = 0.9
    //    it compounds to a measured worst of 0.069. Bound 0.12.
    // v: the unsigned map is twice as fine (0.0035 at step 1), but its errors decay only with
    //    beta2 = 0.999: measured worst 0.055, still rising slowly at step 100. Bound 0.10.
    // params: mean |p8 - p32| / mean |p32| with lr 1e-3 on weights ~0.1, no re-sync: rises to
    //    a measured 0.0023 at step 100. Bound 0.005.
    ASSERT_LE(err_m, 0.12) << "step " << t;
    ASSERT_LE(err_v, 0.10) << "step " << t;
    ASSERT_LE(err_p, 0.005) << "step " << t;

    if (t == 50) {
      // Save -> load into a fresh optimizer -> save again: byte-identical.
      const std::vector<optim::SavedStateEntry> saved = optim::save_optimizer_state(q8);
      restored = std::make_unique<optim::AdamW>(config(optim::StateFormat::kBlock8), std::vector<optim::ShardSpec>{{0, uint64_t(kN)}});
      optim::load_optimizer_state(*restored, saved);
      const std::vector<optim::SavedStateEntry> again = optim::save_optimizer_state(*restored);
      ASSERT_EQ(saved.size(), again.size());
      size_t bytes = 0;
      for (size_t i = 0; i < saved.size(); ++i) {
        EXPECT_EQ(saved[i].name, again[i].name);
        EXPECT_EQ(saved[i].bytes, again[i].bytes) << saved[i].name;
        bytes += saved[i].bytes.size();
      }
      EXPECT_EQ(restored->steps_taken(), 50);
      std::printf("saved and reloaded %zu state entries, %zu bytes, byte-identical\n", saved.size(), bytes);
      restored_buffers = std::make_unique<ShardBuffers>(kN, DType::kF32);
      std::memcpy(restored_buffers->w_bits(), b.w_bits(), size_t(kN) * 2);
    }
  }
  std::printf("worst over %d steps: m %.4f, v %.4f of block absmax; params mean rel error %.3g\n", kSteps, worst_m,
              worst_v, worst_p);
  // The restored optimizer continued exactly as the original would have.
  ASSERT_TRUE(restored);
  EXPECT_EQ(0, std::memcmp(restored->master(0), q8.master(0), size_t(kN) * 4));
  EXPECT_EQ(0, std::memcmp(restored_buffers->w_bits(), b.w_bits(), size_t(kN) * 2));
  const auto s1 = optim::save_optimizer_state(q8), s2 = optim::save_optimizer_state(*restored);
  for (size_t i = 0; i < s1.size(); ++i) EXPECT_EQ(s1[i].bytes, s2[i].bytes) << s1[i].name;
}

}  // namespace
}  // namespace farthing::test

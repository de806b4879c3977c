// test_sr_vs_rn.cpp — stochastic vs round-to-nearest bf16 weights at fine-tuning learning
// rates, model-sized: 1M weights drawn like a trained model's (normal, std 0.02), lr 1e-6 and
// 1e-5, gradients with a consistent direction per element plus noise. Four runs on the same
// gradients: fp32 master + RN cast (the master is the fp32 reference trajectory), fp32 master
// + SR cast, no master + SR (the bf16 weight itself updated with SR), and no master + RN (pure
// bf16 training: an update below half a spacing is lost for good).
// Reported: the fraction of bf16 weights each step leaves unchanged (docs/numerics.md §2: the seed
// paper saw 99.42% after step 1 and 98.84% after step 4 with RN). Checked: RN leaves most
// weights unchanged and its bf16 weights barely follow the master; SR's weights follow the
// fp32 trajectory in mean (regression slope of their drift on the master's drift near 1); pure
// bf16 RN, with nothing to accumulate the lost updates in, follows it least.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "framework/optim/adamw.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

constexpr int64_t kN = 1 << 20;
constexpr int kSteps = 20;

optim::OptimizerConfig config(double lr, optim::MasterMode master, optim::WeightRounding rounding) {
  optim::OptimizerConfig c;
  c.groups = {{"g", {lr, 0.9, 0.999, 1e-8, 0.0}, optim::StateFormat::kF32}};
  c.ranges = {{"w", 0, uint64_t(kN), 0}};
  c.master_mode = master;
  c.weight_rounding = rounding;
  c.seed = 1234;
  return c;
}

// sum(x * y) / sum(y * y): how much of the reference drift y the drift x reproduces.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  double xy = 0.0, yy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    xy += x[i] * y[i];
    yy += y[i] * y[i];
  }
  return xy / yy;
}

TEST(SrVsRn, RnSticksWhileSrTracksTheFp32Trajectory) {
  const std::vector<float> init = normal_values(31, size_t(kN), 0.02);
  const std::vector<float> direction = normal_values(32, size_t(kN), 1e-3);
  for (double lr : {1e-6, 1e-5}) {
    optim::AdamW rn(config(lr, optim::MasterMode::kF32, optim::WeightRounding::kNearest), {{0, uint64_t(kN)}});
    optim::AdamW sr(config(lr, optim::MasterMode::kF32, optim::WeightRounding::kStochastic), {{0, uint64_t(kN)}});
    optim::AdamW free(config(lr, optim::MasterMode::kNone, optim::WeightRounding::kStochastic), {{0, uint64_t(kN)}});
    optim::AdamW stuck(config(lr, optim::MasterMode::kNone, optim::WeightRounding::kNearest), {{0, uint64_t(kN)}});
    ShardBuffers a(kN, DType::kBF16), b(kN, DType::kBF16), c(kN, DType::kBF16), d(kN, DType::kBF16);
    for (ShardBuffers* s : {&a, &b, &c, &d}) set_weights_rn(*s, init.data());
    rn.init_master(0, a.w());
    sr.init_master(0, b.w());
    std::printf("lr %.0e: unchanged bf16 weights per step (RN | SR cast | no master + SR | no master + RN):\n", lr);
    double min_rn_unchanged = 1.0, last_stuck_unchanged = 0.0, last_free_unchanged = 0.0;
    for (int t = 1; t <= kSteps; ++t) {
      const std::vector<float> noise = normal_values(500 + uint64_t(t), size_t(kN), 1e-3);
      for (int64_t i = 0; i < kN; ++i) {
        const uint16_t g = numerics::f32_to_bf16_rne(direction[size_t(i)] + noise[size_t(i)]);
        a.g_bf16()[i] = b.g_bf16()[i] = c.g_bf16()[i] = d.g_bf16()[i] = g;
      }
      const optim::StepDiagnostics da = step_once(rn, {&a});
      const optim::StepDiagnostics db = step_once(sr, {&b});
      const optim::StepDiagnostics dc = step_once(free, {&c});
      const optim::StepDiagnostics dd = step_once(stuck, {&d});
      min_rn_unchanged = std::min(min_rn_unchanged, da.unchanged_fraction);
      last_stuck_unchanged = dd.unchanged_fraction;
      last_free_unchanged = dc.unchanged_fraction;
      if (t <= 4 || t % 5 == 0) {
        std::printf("  step %2d: %.4f | %.4f | %.4f | %.4f   (update/weight rms %.2e)\n", t, da.unchanged_fraction,
                    db.unchanged_fraction, dc.unchanged_fraction, dd.unchanged_fraction, da.update_rms_ratio);
      }
    }
    // Drifts from the start: the fp32 master's (the reference), and each bf16 weight set's.
    std::vector<double> ref(kN), d_rn(kN), d_sr(kN), d_free(kN), d_stuck(kN);
    double mean_sr_err = 0.0, mean_free_err = 0.0, ref_abs = 0.0;
    for (int64_t i = 0; i < kN; ++i) {
      const double w0 = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(init[size_t(i)]));
      ref[size_t(i)] = double(rn.master(0)[i]) - w0;
      d_rn[size_t(i)] = numerics::bf16_to_f32(a.w_bits()[i]) - w0;
      d_sr[size_t(i)] = numerics::bf16_to_f32(b.w_bits()[i]) - w0;
      d_free[size_t(i)] = numerics::bf16_to_f32(c.w_bits()[i]) - w0;
      d_stuck[size_t(i)] = numerics::bf16_to_f32(d.w_bits()[i]) - w0;
      mean_sr_err += d_sr[size_t(i)] - ref[size_t(i)];
      mean_free_err += d_free[size_t(i)] - ref[size_t(i)];
      ref_abs += std::fabs(ref[size_t(i)]);
    }
    const double s_rn = slope(d_rn, ref), s_sr = slope(d_sr, ref), s_free = slope(d_free, ref);
    const double s_stuck = slope(d_stuck, ref);
    std::printf("  after %d steps, drift of the bf16 weights vs the fp32 master's (slope): RN %.3f, SR cast %.3f, "
                "no master + SR %.3f, no master + RN %.3f; mean bias of SR %.2e, no-master SR %.2e "
                "(mean |drift| %.2e)\n",
                kSteps, s_rn, s_sr, s_free, s_stuck, mean_sr_err / kN, mean_free_err / kN, ref_abs / kN);
    // Measured (printed above): RN leaves 97.6-98.4% of the weights unchanged every step at
    // lr 1e-6 and 77-87% at 1e-5 (weights ~N(0, 0.02): the many small ones have bf16 spacings
    // below the update). At 1e-6 RN's bf16 weights reproduce a third of the master's drift
    // (slope 0.31); at 1e-5 the master drifts about one spacing in 20 steps and RN of it
    // follows (slope 1.00). SR (cast or no-master) stays within 0.005 of slope 1 at both, with
    // a mean bias below 2e-4 of the mean drift. Bounds leave room for other seeds.
    EXPECT_GT(min_rn_unchanged, lr < 5e-6 ? 0.95 : 0.7) << "RN should leave most weights unchanged at lr " << lr;
    EXPECT_NEAR(s_sr, 1.0, 0.05) << "SR cast should follow the fp32 master in mean at lr " << lr;
    EXPECT_NEAR(s_free, 1.0, 0.05) << "no-master SR should follow the fp32 trajectory in mean at lr " << lr;
    EXPECT_LT(std::fabs(mean_sr_err / kN), 0.05 * ref_abs / kN);
    EXPECT_LT(std::fabs(mean_free_err / kN), 0.05 * ref_abs / kN);
    if (lr < 5e-6) {
      EXPECT_LT(s_rn, 0.5) << "RN should lose most of the drift at lr 1e-6";
    }
    // Pure bf16 RN (no master) measured: slope 0.014 at lr 1e-6 and 0.159 at 1e-5; 99.25% and
    // 91.73% of the weights unchanged at step 20 against no-master SR's 97.48% and 84.28%.
    EXPECT_LT(s_stuck, lr < 5e-6 ? 0.1 : 0.4) << "pure bf16 RN should lose most of the drift at lr " << lr;
    EXPECT_LT(s_stuck, s_rn) << "without a master nothing accumulates the lost updates";
    EXPECT_GT(last_stuck_unchanged, last_free_unchanged) << "RN without a master should leave more weights stuck than SR";
  }
}

}  // namespace
}  // namespace farthing::test

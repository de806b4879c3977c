// test_step_scalar_parity.cpp — the fused CPU step equals the scalar definitions element by
// element: numerics::adamw_update_element, then the bf16 cast with the random bits of
// numerics::random_bits_for_element for the element's global index. This pins the CPU's
// vectorized Philox (kernels/cpu/optim_cpu.cpp) to the one definition the CUDA kernel uses.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/optim_cpu.h"
#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/stochastic_round.h"
#include "tests/support/test_support.h"

namespace nm = farthing::numerics;
using namespace farthing::kernels;

namespace {

void expect_step_matches_scalars(MasterMode master_mode, WeightRounding rounding, size_t n,
                                 uint64_t global_offset) {
  farthing::test::SplitMix64 rng(n + global_offset);
  std::vector<float> grad(n), master(n), m(n), v(n);
  std::vector<uint16_t> weight(n);
  for (size_t i = 0; i < n; ++i) {
    grad[i] = float(rng.normal()) * 1e-3f;
    master[i] = float(rng.normal()) * 0.02f;
    weight[i] = nm::f32_to_bf16_rne(master[i]);
    m[i] = float(rng.normal()) * 1e-4f;
    v[i] = float(rng.uniform()) * 1e-7f;
  }
  // The scalar reference, from the definitions alone.
  const nm::AdamWScalars scalars = nm::make_adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.01, 7, 0.5);
  const uint32_t step = 7;
  const uint64_t seed = 0xFEEDFACE;
  const bool has_master = master_mode == MasterMode::kF32;
  const nm::RandomKey key{seed, step, has_master ? nm::RandomPurpose::kWeightCast : nm::RandomPurpose::kMasterFreeUpdate};
  std::vector<uint16_t> want_weight(n);
  std::vector<float> want_master(n), want_m(m), want_v(v);
  for (size_t i = 0; i < n; ++i) {
    float p = has_master ? master[i] : nm::bf16_to_f32(weight[i]);
    nm::adamw_update_element(scalars, grad[i], p, want_m[i], want_v[i]);
    want_master[i] = p;
    const bool stochastic = rounding == WeightRounding::kStochastic;
    want_weight[i] = stochastic ? nm::f32_to_bf16_sr(p, nm::random_bits_for_element(key, global_offset + i))
                                : nm::f32_to_bf16_rne(p);
  }

  AdamWSegmentCpu seg;
  seg.n = n;
  seg.global_offset = global_offset;
  seg.grad = grad.data();
  seg.grad_format = GradFormat::kF32;
  seg.weight = weight.data();
  seg.master = has_master ? master.data() : nullptr;
  seg.master_mode = master_mode;
  seg.weight_rounding = rounding;
  seg.m = {MomentFormat::kF32, m.data(), nullptr};
  seg.v = {MomentFormat::kF32, v.data(), nullptr};
  seg.scalars = scalars;
  seg.seed = seed;
  seg.step = step;
  adamw_step_cpu(seg);

  int mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool same = weight[i] == want_weight[i] && m[i] == want_m[i] && v[i] == want_v[i] &&
                      (!has_master || master[i] == want_master[i]);
    if (!same && mismatches++ < 5) {
      ADD_FAILURE() << "element " << i << " (global " << global_offset + i << "): weight 0x" << std::hex
                    << weight[i] << " want 0x" << want_weight[i] << std::dec;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace

TEST(AdamWStepScalarParity, NoMasterStochasticRounding) {
  expect_step_matches_scalars(MasterMode::kNone, WeightRounding::kStochastic, 100003, 1283);
  expect_step_matches_scalars(MasterMode::kNone, WeightRounding::kStochastic, 7, 5);
}

TEST(AdamWStepScalarParity, NoMasterRoundToNearest) {
  expect_step_matches_scalars(MasterMode::kNone, WeightRounding::kNearest, 100003, 1283);
  expect_step_matches_scalars(MasterMode::kNone, WeightRounding::kNearest, 7, 5);
}

TEST(AdamWStepScalarParity, Fp32MasterStochasticCast) {
  expect_step_matches_scalars(MasterMode::kF32, WeightRounding::kStochastic, 4099, 256 * 3 + 1);
}

TEST(AdamWStepScalarParity, Fp32MasterNearestCast) {
  expect_step_matches_scalars(MasterMode::kF32, WeightRounding::kNearest, 4099, 0);
}

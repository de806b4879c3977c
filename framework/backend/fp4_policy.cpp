// fp4_policy.cpp — see fp4_policy.h.
#include "framework/backend/fp4_policy.h"

#include <cmath>

namespace farthing {

bool fp4_gemm_in_fp4(const Fp4Recipe& recipe, Fp4Gemm gemm) {
  return recipe.gemms == Fp4Gemms::kAll || gemm != Fp4Gemm::kForward;
}

bool fp4_uses_rht(const Fp4Recipe& recipe, Fp4Gemm gemm) {
  switch (recipe.rht) {
    case Fp4Rht::kNone: return false;
    case Fp4Rht::kWgrad: return gemm == Fp4Gemm::kWgrad;
    case Fp4Rht::kBackward: return gemm != Fp4Gemm::kForward;
  }
  return false;
}

bool fp4_rounds_stochastically(const Fp4Recipe& recipe, Fp4Gemm gemm, Fp4OperandRole role) {
  switch (recipe.sr) {
    case Fp4Sr::kNone: return false;
    case Fp4Sr::kGradOutput: return role == Fp4OperandRole::kGradOutput;
    case Fp4Sr::kBackward: return gemm != Fp4Gemm::kForward;
  }
  return false;
}

bool fp4_block_2d(const Fp4Recipe& recipe, Fp4OperandRole role) {
  return role == Fp4OperandRole::kWeight && recipe.weight_scaling == Fp4WeightScaling::k2D;
}

int fp4_bf16_last_blocks(const Fp4Recipe& recipe, int blocks) {
  // NOTE: the product is rounded up after a tiny downward nudge, so 0.2 x 5 blocks is 1, not 2
  // (0.2 * 5 is 1.0000000000000002 in binary).
  const double kept = std::ceil(recipe.bf16_last_fraction * blocks - 1e-9);
  return kept <= 0.0 ? 0 : kept >= blocks ? blocks : int(kept);
}

}  // namespace farthing

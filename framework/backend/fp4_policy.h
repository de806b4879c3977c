// fp4_policy.h — the FP4 training recipes as policy: every choice of NVIDIA's NVFP4 recipe
// ("Pretraining LLMs with NVFP4", arXiv 2509.25149) and Tseng et al.'s MXFP4 recipe ("Training
// LLMs with MXFP4", arXiv 2502.20586) as a knob, each defaulting to its paper. The maths of one
// block is kernels/numerics/fp4_block.h, of the transform hadamard.h; models/common/fp4_linears.h
// applies this policy to a model's linear layers; docs/fp4.md describes both recipes.
//
// Per linear layer, three GEMMs (reduced dimension in brackets):
//   forward  y  = x · W^T     [K]    operands x, W
//   dgrad    dx = dy · W      [N]    operands dy, W^T
//   wgrad    dW = dy^T · x    [M]    operands dy^T, x^T
// Relies on: kernels/numerics/fp4_operand.h. Tested by: tests/train/loop/test_fp4_recipe.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "kernels/numerics/fp4_operand.h"

namespace farthing {

using kernels::Fp4Scale;

enum class Fp4WeightScaling : uint8_t { k1D, k2D };
// Which GEMMs run in FP4: all three, or only the two of backward (forward stays bf16).
enum class Fp4Gemms : uint8_t { kAll, kBackward };
// Which GEMMs' operands get the random Hadamard transform (along their reduced dimension).
enum class Fp4Rht : uint8_t { kNone, kWgrad, kBackward };
// Which operands are rounded stochastically (the rest round to nearest even): none; the output
// gradient dy wherever it enters a GEMM; or every operand of the backward GEMMs (dy, W, x).
enum class Fp4Sr : uint8_t { kNone, kGradOutput, kBackward };

struct Fp4Recipe {
  int block = 16;                                  // elements sharing a scale: 16 | 32
  Fp4Scale scale = Fp4Scale::kE4M3;                // e4m3 (+ an fp32 tensor scale) | e8m0
  Fp4WeightScaling weight_scaling = Fp4WeightScaling::k2D;  // 2d: block x block tiles
  Fp4Gemms gemms = Fp4Gemms::kAll;
  Fp4Rht rht = Fp4Rht::kWgrad;
  int rht_size = 16;                               // chunk of the transform: 4 | 16 | 64 | 256
  Fp4Sr sr = Fp4Sr::kGradOutput;
  double bf16_last_fraction = 0.15;                // share of the last blocks kept in bf16 (rounded up)
  bool sr_prescale = false;                        // e8m0: SR operands encoded at 3/4 (fp4_scale_rules.h)

  bool operator==(const Fp4Recipe&) const = default;
};

// NVIDIA's NVFP4 recipe: 16-element blocks, E4M3 scales and an fp32 tensor scale; weights in
// 16x16 tiles (forward and backward see the same quantized weight); every GEMM in FP4; the RHT
// (16) on wgrad's operands only; SR on the gradients, round to nearest elsewhere; the last blocks
// in bf16.
inline constexpr Fp4Recipe kNvfp4Paper{16, Fp4Scale::kE4M3, Fp4WeightScaling::k2D, Fp4Gemms::kAll,
                                       Fp4Rht::kWgrad, 16, Fp4Sr::kGradOutput, 0.15, false};
// Tseng et al.'s MXFP4 recipe: 32-element blocks with E8M0 scales; the backward GEMMs in MXFP4
// (the forward in bf16); the RHT on both backward GEMMs' operands; SR on every backward operand,
// each pre-scaled by 3/4 so that no element clips; no bf16 blocks.
inline constexpr Fp4Recipe kMxfp4Paper{32, Fp4Scale::kE8M0, Fp4WeightScaling::k1D, Fp4Gemms::kBackward,
                                       Fp4Rht::kBackward, 64, Fp4Sr::kBackward, 0.0, true};

// Names as the recipe spells them (the nvfp4 and mxfp4 sections), in the order errors list them.
inline constexpr std::array<std::pair<Fp4Scale, std::string_view>, 2> kFp4ScaleNames{{
    {Fp4Scale::kE4M3, "e4m3"}, {Fp4Scale::kE8M0, "e8m0"}}};
inline constexpr std::array<std::pair<Fp4WeightScaling, std::string_view>, 2> kFp4WeightScalingNames{{
    {Fp4WeightScaling::k1D, "1d"}, {Fp4WeightScaling::k2D, "2d"}}};
inline constexpr std::array<std::pair<Fp4Gemms, std::string_view>, 2> kFp4GemmsNames{{
    {Fp4Gemms::kAll, "all"}, {Fp4Gemms::kBackward, "backward"}}};
inline constexpr std::array<std::pair<Fp4Rht, std::string_view>, 3> kFp4RhtNames{{
    {Fp4Rht::kNone, "none"}, {Fp4Rht::kWgrad, "wgrad"}, {Fp4Rht::kBackward, "backward"}}};
inline constexpr std::array<std::pair<Fp4Sr, std::string_view>, 3> kFp4SrNames{{
    {Fp4Sr::kNone, "none"}, {Fp4Sr::kGradOutput, "grad_output"}, {Fp4Sr::kBackward, "backward"}}};

// The GEMMs of a linear layer and the operands they read.
enum class Fp4Gemm : uint8_t { kForward, kDgrad, kWgrad };
enum class Fp4OperandRole : uint8_t { kInput, kWeight, kGradOutput };

bool fp4_gemm_in_fp4(const Fp4Recipe& recipe, Fp4Gemm gemm);
bool fp4_uses_rht(const Fp4Recipe& recipe, Fp4Gemm gemm);
bool fp4_rounds_stochastically(const Fp4Recipe& recipe, Fp4Gemm gemm, Fp4OperandRole role);
// 2D tiles for the weight under 2d weight scaling; 1D blocks for everything else.
bool fp4_block_2d(const Fp4Recipe& recipe, Fp4OperandRole role);
// How many of the model's last blocks stay bf16: ceil(bf16_last_fraction * blocks).
int fp4_bf16_last_blocks(const Fp4Recipe& recipe, int blocks);

}  // namespace farthing

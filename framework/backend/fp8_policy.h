// fp8_policy.h — FP8 scaling as policy: which tiles share a scale, which format each tensor role
// takes, and where per-tensor scales come from (the tensor itself, or an amax history). The
// maths of one scale and one cast is kernels/numerics/fp8_scaling.h; the kernels apply it
// (NnOps::fp8_quantize); this file decides what they are asked.
//
// The recipes follow Transformer Engine's and DeepSeek-V3's:
//   - kBlock (DeepSeek-V3): activations and output gradients in 1 x 128 tiles along the reduced
//     dimension (so 128 x 1 down the columns where a GEMM reduces over rows: the weight
//     gradient), weights in 128 x 128 blocks, every scale from its own tile ("current");
//   - kTensorCurrent: one scale per tensor, from that tensor's amax at the cast;
//   - kTensorDelayed: one scale per tensor from the amax history of earlier steps (max or most
//     recent), the history being training state (checkpointed; Fp8AmaxHistory below).
// Relies on: kernels/numerics/fp8_scaling.h. Tested by: tests/backend/test_fp8_policy.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/numerics/fp8_scaling.h"

namespace farthing {

using numerics::Fp8Format;
using numerics::Fp8Tiling;

enum class Fp8Scaling : uint8_t { kBlock, kTensorCurrent, kTensorDelayed };
enum class Fp8AmaxCompute : uint8_t { kMax, kMostRecent };
// Which linear layers of each block compute in FP8 (the embedding, the norms, attention's
// softmax, the loss and the output head always stay bf16/fp32).
enum class Fp8Layers : uint8_t { kAll, kMlp, kAttention };
// The three operands of a linear layer's GEMMs.
enum class Fp8Role : uint8_t { kInput, kWeight, kGradOutput };
inline constexpr int kFp8Roles = 3;

struct Fp8Recipe {
  Fp8Scaling scaling = Fp8Scaling::kBlock;
  Fp8Format input = Fp8Format::kE4M3;
  Fp8Format weight = Fp8Format::kE4M3;
  Fp8Format grad_output = Fp8Format::kE4M3;
  int margin = 0;
  bool power_of_two_scales = true;
  int amax_history_len = 16;  // kTensorDelayed only
  Fp8AmaxCompute amax_compute = Fp8AmaxCompute::kMax;
  Fp8Layers layers = Fp8Layers::kAll;
};

// Names as the recipe spells them (the fp8 section), in the order its errors list them: the one
// table of each (recipe/run_config.h reads these).
inline constexpr std::array<std::pair<Fp8Scaling, std::string_view>, 3> kFp8ScalingNames{{
    {Fp8Scaling::kBlock, "block"},
    {Fp8Scaling::kTensorCurrent, "tensor_current"},
    {Fp8Scaling::kTensorDelayed, "tensor_delayed"}}};
inline constexpr std::array<std::pair<Fp8Format, std::string_view>, 2> kFp8FormatNames{{
    {Fp8Format::kE4M3, "e4m3"}, {Fp8Format::kE5M2, "e5m2"}}};
inline constexpr std::array<std::pair<Fp8AmaxCompute, std::string_view>, 2> kFp8AmaxComputeNames{{
    {Fp8AmaxCompute::kMax, "max"}, {Fp8AmaxCompute::kMostRecent, "most_recent"}}};
inline constexpr std::array<std::pair<Fp8Layers, std::string_view>, 3> kFp8LayersNames{{
    {Fp8Layers::kAll, "all"}, {Fp8Layers::kMlp, "mlp"}, {Fp8Layers::kAttention, "attention"}}};

// The scaling's name (test and benchmark labels).
std::string_view fp8_scaling_name(Fp8Scaling scaling);

Fp8Format fp8_format_of(const Fp8Recipe& recipe, Fp8Role role);
// The tiling of a role's operand in a GEMM that reduces over its rows (the weight gradient's
// dy^T x) or over its columns (every other GEMM).
Fp8Tiling fp8_tiling_of(const Fp8Recipe& recipe, Fp8Role role, bool reduced_over_rows);

// Delayed scaling's state: per tensor, the amaxes of the last `length` steps (newest first; an
// empty slot reads 0).
// The scales used during a step come from the history as it stood before the step; the amaxes
// seen during the step (every micro-batch; every rank after the trainer's max all-reduce) become
// the newest entries at its end. So the history, and every scale, is the same at every world
// size and gradient-accumulation split, and a resumed run continues it exactly.
class Fp8AmaxHistory {
 public:
  Fp8AmaxHistory() = default;
  Fp8AmaxHistory(int64_t tensors, int length);

  int64_t tensors() const { return tensors_; }
  int length() const { return length_; }
  // This step's scale for `tensor`.
  float scale(int64_t tensor, const Fp8Recipe& recipe, Fp8Format format) const;
  // False while every entry of the tensor is 0 (its first step): the caller then scales that
  // cast from the tensor's own amax instead of starting at 1, so the first step's small
  // gradients are not flushed to zero (where Transformer Engine starts at scale 1).
  bool has_history(int64_t tensor) const;
  // Folds an amax seen this step into the tensor's step amax (NaN-dominant max).
  void observe(int64_t tensor, float amax);
  // This step's amaxes as ordered bits (tensors() of them), for a max all-reduce across ranks.
  std::vector<uint32_t>& step_amax_bits() { return step_bits_; }
  // The step's amaxes become the newest entries; a skipped (non-finite) step's are dropped.
  void end_step();
  void discard_step();
  // Changes whenever the entries do (end_step, set_entries): a user of scale() that keeps
  // copies of the scales (Fp8Linears, in device memory) refreshes them when it moves.
  uint64_t version() const { return version_; }
  // tensors() x length() floats, row-major, newest first: what a checkpoint stores.
  const std::vector<float>& entries() const { return entries_; }
  void set_entries(const std::vector<float>& entries);

 private:
  int64_t tensors_ = 0;
  int length_ = 0;
  std::vector<float> entries_;
  std::vector<uint32_t> step_bits_;
  uint64_t version_ = 0;
};

}  // namespace farthing

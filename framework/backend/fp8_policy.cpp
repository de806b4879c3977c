// fp8_policy.cpp — see fp8_policy.h.
#include "framework/backend/fp8_policy.h"

#include <algorithm>

#include "framework/core/error.h"

namespace farthing {

namespace nm = farthing::numerics;

std::string_view fp8_scaling_name(Fp8Scaling scaling) {
  for (const auto& [value, name] : kFp8ScalingNames) {
    if (value == scaling) return name;
  }
  return "?";
}

Fp8Format fp8_format_of(const Fp8Recipe& recipe, Fp8Role role) {
  return role == Fp8Role::kInput ? recipe.input : role == Fp8Role::kWeight ? recipe.weight : recipe.grad_output;
}

Fp8Tiling fp8_tiling_of(const Fp8Recipe& recipe, Fp8Role role, bool reduced_over_rows) {
  if (recipe.scaling != Fp8Scaling::kBlock) return Fp8Tiling::kTensor;
  if (role == Fp8Role::kWeight) return Fp8Tiling::kBlock128;
  return reduced_over_rows ? Fp8Tiling::kCol128x1 : Fp8Tiling::kRow1x128;
}

Fp8AmaxHistory::Fp8AmaxHistory(int64_t tensors, int length)
    : tensors_(tensors), length_(length), entries_(size_t(tensors * length), 0.0f), step_bits_(size_t(tensors), 0u) {
  FARTHING_CHECK(tensors >= 0 && length >= 1, "fp8 amax history: ", tensors, " tensors of length ", length,
                 " (expected a length of at least 1)");
}

float Fp8AmaxHistory::scale(int64_t tensor, const Fp8Recipe& recipe, Fp8Format format) const {
  const float* row = entries_.data() + tensor * length_;
  uint32_t bits = nm::fp8_abs_bits(row[0]);
  if (recipe.amax_compute == Fp8AmaxCompute::kMax) {
    for (int i = 1; i < length_; ++i) bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(row[i]));
  }
  return nm::fp8_scale_from_amax(nm::bits_to_f32(bits), format, recipe.margin, recipe.power_of_two_scales);
}

bool Fp8AmaxHistory::has_history(int64_t tensor) const {
  const float* row = entries_.data() + tensor * length_;
  return std::any_of(row, row + length_, [](float a) { return nm::fp8_abs_bits(a) != 0u; });
}

void Fp8AmaxHistory::observe(int64_t tensor, float amax) {
  uint32_t& bits = step_bits_[size_t(tensor)];
  bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(amax));
}

void Fp8AmaxHistory::end_step() {
  for (int64_t t = 0; t < tensors_; ++t) {
    float* row = entries_.data() + t * length_;
    std::copy_backward(row, row + length_ - 1, row + length_);
    row[0] = nm::bits_to_f32(step_bits_[size_t(t)]);
  }
  std::fill(step_bits_.begin(), step_bits_.end(), 0u);
  ++version_;
}

void Fp8AmaxHistory::discard_step() { std::fill(step_bits_.begin(), step_bits_.end(), 0u); }

void Fp8AmaxHistory::set_entries(const std::vector<float>& entries) {
  FARTHING_CHECK(int64_t(entries.size()) == tensors_ * length_, "fp8 amax history: ", entries.size(),
                 " entries, expected ", tensors_, " tensors x ", length_);
  entries_ = entries;
  ++version_;
}

}  // namespace farthing

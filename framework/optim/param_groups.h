// param_groups.h — the default split of tensors into "decay" and "no_decay" groups.
//
// As torchtune, HF transformers and nanoGPT do: weight decay on matrices (rank >= 2), none on
// norms and biases (rank 1, or names containing "norm" or ending in "bias"); embeddings decay
// unless the caller says otherwise. Groups are then described by global ranges (ParamRange).
// Relies on: optim_config.h. Tested by: tests/optim/test_optim_config.cpp.
#pragma once

#include <string_view>
#include <vector>

#include "framework/optim/optim_config.h"

namespace farthing::optim {

inline constexpr int kDecayGroup = 0;
inline constexpr int kNoDecayGroup = 1;

// {"decay": hyper, "no_decay": hyper with weight_decay 0}, both with the given state format.
std::vector<ParamGroup> default_param_groups(const AdamWHyper& hyper, StateFormat state_format);

// kDecayGroup or kNoDecayGroup for a tensor of that name and rank.
int default_group_of(std::string_view tensor_name, int rank);

}  // namespace farthing::optim

// param_groups.cpp — see param_groups.h.
#include "framework/optim/param_groups.h"

namespace farthing::optim {

std::vector<ParamGroup> default_param_groups(const AdamWHyper& hyper, StateFormat state_format) {
  AdamWHyper no_decay = hyper;
  no_decay.weight_decay = 0.0;
  return {ParamGroup{"decay", hyper, state_format}, ParamGroup{"no_decay", no_decay, state_format}};
}

int default_group_of(std::string_view name, int rank) {
  const bool is_norm = name.find("norm") != std::string_view::npos;
  const bool is_bias = name.size() >= 4 && name.substr(name.size() - 4) == "bias";
  return rank < 2 || is_norm || is_bias ? kNoDecayGroup : kDecayGroup;
}

}  // namespace farthing::optim

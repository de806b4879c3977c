// optimizer_setup.cpp — see optimizer_setup.h.
#include "train/loop/optimizer_setup.h"

#include "framework/optim/param_groups.h"

namespace farthing::train {

namespace {

bool is_embedding_or_head(const std::string& name) {
  return name.find("embed_tokens") != std::string::npos || name.find("lm_head") != std::string::npos ||
         name.find("wte") != std::string::npos || name.find("wpe") != std::string::npos;
}

}  // namespace

OptimizerSetup make_optimizer_setup(const models::FlatLayout& layout, const recipe::OptimizerSection& section,
                                    uint64_t seed) {
  OptimizerSetup setup;
  optim::OptimizerConfig& c = setup.config;
  optim::AdamWHyper hyper;
  hyper.lr = section.lr;
  hyper.beta1 = section.beta1;
  hyper.beta2 = section.beta2;
  hyper.eps = section.eps;
  hyper.weight_decay = section.weight_decay;
  c.groups = optim::default_param_groups(hyper, section.state);
  c.master_mode = section.master;
  c.weight_rounding = section.weight_rounding;
  c.seed = seed;

  // NOTE: ranges never cross a unit boundary, even where two units sit back to back (GPT-2's
  // 256-aligned blocks): ZeRO shards each unit, and the checkpoint writes a range from the one
  // segment a rank owns of it.
  int last_unit = -1;
  for (const models::ParamEntry& e : layout.entries()) {
    const int group = optim::default_group_of(e.name, e.shape.rank);
    const bool keep_f32 = section.embedding_f32_state && is_embedding_or_head(e.name);
    const bool same_unit = e.unit == last_unit;
    last_unit = e.unit;
    if (!c.ranges.empty() && same_unit) {
      optim::ParamRange& last = c.ranges.back();
      const bool packed_after = last.global_offset + last.numel == uint64_t(e.offset_elems);
      if (packed_after && last.group == group && last.keep_f32_state == keep_f32) {
        last.name += "+" + e.name;
        last.numel += uint64_t(e.numel());
        continue;
      }
    }
    c.ranges.push_back(optim::ParamRange{e.name, uint64_t(e.offset_elems), uint64_t(e.numel()), group, keep_f32});
  }
  for (optim::ParamRange& r : c.ranges) {
    if (optim::is_quantized(optim::effective_state_format(c, r)) && r.global_offset % optim::kQuantBlockElems != 0) {
      r.keep_f32_state = true;
      ++setup.demoted;
    }
  }
  return setup;
}

}  // namespace farthing::train

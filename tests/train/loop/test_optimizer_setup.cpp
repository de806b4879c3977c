// test_optimizer_setup.cpp — the optimizer's ranges over every preset's flat layout: each range
// lies inside one ZeRO unit (the checkpoint writes a range from the one segment a rank owns of
// it, and ZeRO shards units, so a range across a unit boundary would be split into segments and
// saved half-written), the ranges cover every tensor exactly once in layout order, and packed
// tensors of one group inside a unit still merge (q/k/v start one range).
// Regression: GPT-2 124M's blocks are 256-aligned, so block l's last tensor (mlp.c_proj.bias)
// sat back to back with block l+1's ln_1 and the two merged across the unit boundary.
#include <gtest/gtest.h>

#include <string>

#include "train/recipe/run_config.h"
#include "train/loop/optimizer_setup.h"
#include "models/common/presets.h"

namespace farthing::train {
namespace {

int unit_of(const models::FlatLayout& layout, uint64_t offset) {
  for (const models::ParamEntry& e : layout.entries()) {
    if (uint64_t(e.offset_elems) <= offset && offset < uint64_t(e.offset_elems + e.numel())) return e.unit;
  }
  return -1;
}

TEST(OptimizerSetup, EveryRangeLiesInOneUnitAndTheRangesCoverEveryTensorOnce) {
  for (const std::string& preset : models::preset_names()) {
    SCOPED_TRACE(preset);
    const models::TransformerSpec spec = models::make_spec(models::preset_config(preset));
    const models::FlatLayout& layout = spec.layout;
    const OptimizerSetup setup = make_optimizer_setup(layout, recipe::OptimizerSection{}, 1);
    size_t entry = 0;
    for (const optim::ParamRange& r : setup.config.ranges) {
      const int first = unit_of(layout, r.global_offset), last = unit_of(layout, r.global_offset + r.numel - 1);
      EXPECT_EQ(first, last) << "range '" << r.name << "' spans units " << first << ".." << last;
      // The range is the next tensors of the layout, back to back, named in order.
      uint64_t covered = 0;
      std::string names;
      while (covered < r.numel && entry < layout.entries().size()) {
        const models::ParamEntry& e = layout.entries()[entry++];
        EXPECT_EQ(uint64_t(e.offset_elems), r.global_offset + covered) << e.name;
        covered += uint64_t(e.numel());
        names += (names.empty() ? "" : "+") + e.name;
      }
      EXPECT_EQ(covered, r.numel) << r.name;
      EXPECT_EQ(names, r.name);
    }
    EXPECT_EQ(entry, layout.entries().size()) << "tensors left without a range";
  }
}

TEST(OptimizerSetup, Gpt2BlockBoundariesSplitRangesAndFusedTensorsStayMerged) {
  const models::TransformerSpec spec = models::make_spec(models::preset_config("gpt2-124m"));
  const OptimizerSetup setup = make_optimizer_setup(spec.layout, recipe::OptimizerSection{}, 1);
  bool saw_block1_norms = false;
  for (const optim::ParamRange& r : setup.config.ranges) {
    EXPECT_FALSE(r.name.find("h.0.") != std::string::npos && r.name.find("h.1.") != std::string::npos) << r.name;
    if (r.name == "transformer.h.1.ln_1.weight+transformer.h.1.ln_1.bias") saw_block1_norms = true;
  }
  EXPECT_TRUE(saw_block1_norms);
  const models::TransformerSpec llama = models::make_spec(models::preset_config("smollm2-135m"));
  const OptimizerSetup llama_setup = make_optimizer_setup(llama.layout, recipe::OptimizerSection{}, 1);
  bool saw_fused_qkv = false;
  std::string layer0;
  for (const optim::ParamRange& r : llama_setup.config.ranges) {
    if (r.name.find("layers.0.") != std::string::npos) layer0 += " [" + r.name + "]";
    saw_fused_qkv |= r.name.starts_with("model.layers.0.self_attn.q_proj.weight+model.layers.0.self_attn.k_proj.weight+"
                                         "model.layers.0.self_attn.v_proj.weight");
  }
  EXPECT_TRUE(saw_fused_qkv) << "layer 0's ranges:" << layer0;
}

}  // namespace
}  // namespace farthing::train

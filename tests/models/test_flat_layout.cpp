// test_flat_layout.cpp — presets carry the published sizes (parameter counts), layouts keep
// Hugging Face names in a fixed order, units align to 256, fused projections are adjacent,
// and global offsets never depend on the unit padding (the world size).
#include <gtest/gtest.h>

#include <set>

#include "models/common/presets.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {
namespace {

TEST(Presets, ParameterCountsMatchThePublishedModels) {
  // Counts as reported by transformers' num_parameters() for each published checkpoint.
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"gpt2-124m", 124439808},       {"gpt2-355m", 354823168},
      {"gpt2-774m", 774030080},       {"gpt2-1.5b", 1557611200},
      {"smollm2-135m", 134515008},    {"smollm2-360m", 361821120},
      {"smollm2-1.7b", 1711376384},   {"llama3.2-1b", 1235814400},
      {"llama3.2-3b", 3212749824},    {"llama3.1-8b", 8030261248},
      {"llama3.1-70b", 70553706496},  {"qwen2.5-0.5b", 494032768},
      {"qwen2.5-1.5b", 1543714304},   {"qwen2.5-7b", 7615616512},
      {"qwen3-0.6b", 596049920},      {"qwen3-1.7b", 1720574976},
      {"qwen3-4b", 4022468096},       {"qwen3-8b", 8190735360},
      {"gemma3-1b", 999885952},       {"gemma3-4b", 3880263168},  // 4B: its text model alone
  };
  for (const auto& [name, count] : expected) {
    const ModelConfig c = preset_config(name);
    EXPECT_EQ(c.num_params(), count) << name;
    EXPECT_EQ(make_spec(c).layout.param_count(), count) << name;
  }
  EXPECT_EQ(preset_config("stories260k").num_params(), make_spec(preset_config("stories260k")).layout.param_count());
  EXPECT_THROW(preset_config("gpt5"), Error);
}

TEST(Presets, Stories260kIsLlama2cTinyllamas) {
  const ModelConfig c = preset_config("stories260k");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_TRUE(c.tied_embeddings);
}

TEST(FlatLayout, UnitsTensorsAndFusedAdjacency) {
  for (const std::string& name : preset_names()) {
    const TransformerSpec s = make_spec(preset_config(name));
    const FlatLayout& L = s.layout;
    ASSERT_EQ(int64_t(L.units().size()), s.config.n_layers + 2) << name;
    EXPECT_EQ(L.units().front().name, "embedding");
    EXPECT_EQ(L.units().back().name, "head");
    std::set<std::string> names;
    int64_t prev_end = 0;
    for (const ParamUnit& u : L.units()) {
      EXPECT_EQ(u.begin_elems % kUnitAlignElems, 0) << name << " " << u.name;
      EXPECT_GE(u.begin_elems, prev_end);
      prev_end = u.end_elems;
    }
    for (const ParamEntry& e : L.entries()) {
      EXPECT_TRUE(names.insert(e.name).second) << "duplicate " << e.name;
      const ParamUnit& u = L.units()[size_t(e.unit)];
      EXPECT_GE(e.offset_elems, u.begin_elems);
      EXPECT_LE(e.offset_elems + e.numel(), u.end_elems);
    }
    if (s.config.family == ModelFamily::kLlama) {
      const std::string p = "model.layers.1.";
      const auto& q = L.find(p + "self_attn.q_proj.weight");
      const auto& k = L.find(p + "self_attn.k_proj.weight");
      const auto& v = L.find(p + "self_attn.v_proj.weight");
      EXPECT_EQ(k.offset_elems, q.offset_elems + q.numel());
      EXPECT_EQ(v.offset_elems, k.offset_elems + k.numel());
      EXPECT_EQ(s.blocks[1].qkv_w, q.offset_elems);
      const auto& g = L.find(p + "mlp.gate_proj.weight");
      EXPECT_EQ(L.find(p + "mlp.up_proj.weight").offset_elems, g.offset_elems + g.numel());
      EXPECT_EQ(L.contains("lm_head.weight"), !s.config.tied_embeddings);
    } else {
      EXPECT_EQ(L.find("transformer.h.0.attn.c_attn.weight").shape, (Shape{s.config.dim, 3 * s.config.dim}));
    }
  }
}

TEST(FlatLayout, GlobalOffsetsDoNotDependOnThePadding) {
  const TransformerSpec s = make_spec(preset_config("stories260k"));
  const FlatLayout& L = s.layout;
  for (int world : {1, 2, 3, 8}) {
    const UnitPadding pad = pad_to_multiple(256 * world);
    const auto padded = L.padded_unit_elems(pad);
    int64_t storage_begin = 0;
    for (size_t u = 0; u < padded.size(); ++u) {
      EXPECT_EQ(padded[u] % (256 * world), 0);
      EXPECT_GE(padded[u], L.units()[u].span_elems());
      EXPECT_EQ(L.storage_offset(L.units()[u].begin_elems, pad), storage_begin);
      storage_begin += padded[u];
    }
    // The entries themselves never move.
    EXPECT_EQ(L.find("model.layers.2.mlp.down_proj.weight").offset_elems,
              make_spec(preset_config("stories260k")).layout.find("model.layers.2.mlp.down_proj.weight").offset_elems);
  }
  EXPECT_THROW(pad_to_multiple(0), Error);
  EXPECT_THROW(L.find("nope"), Error);
}

TEST(ModelConfig, ParsesHuggingFaceConfigJson) {
  const char* smol = R"({"model_type": "llama", "vocab_size": 49152, "hidden_size": 576,
    "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "max_position_embeddings": 8192, "rms_norm_eps": 1e-05,
    "rope_theta": 100000, "tie_word_embeddings": true, "rope_scaling": null})";
  const ModelConfig c = config_from_hf_json(smol);
  EXPECT_EQ(c.num_params(), preset_config("smollm2-135m").num_params());
  EXPECT_EQ(c.rope_theta, 100000.0f);
  const char* l3 = R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048,
    "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "tie_word_embeddings": true, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
    "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";
  const ModelConfig l = config_from_hf_json(l3);
  EXPECT_EQ(l.rope_scaling.factor, 32.0f);
  EXPECT_EQ(l.num_params(), preset_config("llama3.2-1b").num_params());
  EXPECT_THROW(config_from_hf_json(R"({"model_type": "mamba"})"), Error);
}

// 8-bit optimizer blocks (256 elements of the global space) must belong to one tensor: every
// aligned tensor that could take 8-bit state starts on a block boundary.
TEST(FlatLayout, QuantizableTensorsStartOnBlockBoundaries) {
  for (const std::string& name : preset_names()) {
    const TransformerSpec s = make_spec(preset_config(name));
    const std::vector<ParamEntry>& entries = s.layout.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
      const ParamEntry& e = entries[i];
      // Packed after another large tensor (k after q, up after gate): part of one fused matrix.
      const bool packed = i > 0 && entries[i - 1].numel() >= kBlockAlignMinElems &&
                          entries[i - 1].offset_elems + entries[i - 1].numel() == e.offset_elems;
      if (e.numel() >= kBlockAlignMinElems && !packed) {
        EXPECT_EQ(e.offset_elems % kUnitAlignElems, 0) << name << ": " << e.name;
      }
    }
  }
}

}  // namespace
}  // namespace farthing::models

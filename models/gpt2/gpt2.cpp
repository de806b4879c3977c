// gpt2.cpp — see gpt2.h. Hyper-parameters are those of openai-community/gpt2{,-medium,-large,-xl}.
#include "models/gpt2/gpt2.h"

#include <string>

#include "framework/core/error.h"

namespace farthing::models {

namespace {

ModelConfig gpt2(const char* name, int64_t dim, int64_t layers, int64_t heads) {
  ModelConfig c;
  c.name = name;
  c.family = ModelFamily::kGpt2;
  c.vocab_size = 50257;
  c.dim = dim;
  c.hidden_dim = 4 * dim;
  c.n_layers = layers;
  c.n_heads = c.n_kv_heads = heads;
  c.max_seq_len = 1024;
  c.norm_eps = 1e-5f;
  c.tied_embeddings = true;
  return c;
}

}  // namespace

ModelConfig gpt2_124m() { return gpt2("GPT-2-124M", 768, 12, 12); }
ModelConfig gpt2_355m() { return gpt2("GPT-2-355M", 1024, 24, 16); }
ModelConfig gpt2_774m() { return gpt2("GPT-2-774M", 1280, 36, 20); }
ModelConfig gpt2_1_5b() { return gpt2("GPT-2-1.5B", 1600, 48, 25); }

TransformerSpec gpt2_spec(const ModelConfig& config) {
  config.validate();
  FARTHING_CHECK(config.family == ModelFamily::kGpt2, "gpt2_spec called for non-GPT-2 model '",
                 config.name, "'");
  TransformerSpec s;
  s.config = config;
  s.orientation = WeightOrientation::kInOut;
  FlatLayout& L = s.layout;
  const int64_t C = config.dim, H = config.hidden_dim;
  L.begin_unit("embedding");
  s.tok_emb = L.add("transformer.wte.weight", {config.vocab_size, C});
  s.pos_emb = L.add("transformer.wpe.weight", {config.max_seq_len, C});
  for (int64_t i = 0; i < config.n_layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    BlockOffsets b;
    L.begin_unit("block." + std::to_string(i));
    b.norm1_w = L.add(p + "ln_1.weight", {C});
    b.norm1_b = L.add(p + "ln_1.bias", {C});
    b.qkv_w = L.add(p + "attn.c_attn.weight", {C, 3 * C});
    b.qkv_b = L.add(p + "attn.c_attn.bias", {3 * C});
    b.attn_out_w = L.add(p + "attn.c_proj.weight", {C, C});
    b.attn_out_b = L.add(p + "attn.c_proj.bias", {C});
    b.norm2_w = L.add(p + "ln_2.weight", {C});
    b.norm2_b = L.add(p + "ln_2.bias", {C});
    b.mlp_in_w = L.add(p + "mlp.c_fc.weight", {C, H});
    b.mlp_in_b = L.add(p + "mlp.c_fc.bias", {H});
    b.mlp_out_w = L.add(p + "mlp.c_proj.weight", {H, C});
    b.mlp_out_b = L.add(p + "mlp.c_proj.bias", {C});
    s.ones.insert(s.ones.end(), {b.norm1_w, b.norm2_w});
    s.zeros.insert(s.zeros.end(), {b.norm1_b, b.qkv_b, b.attn_out_b, b.norm2_b, b.mlp_in_b, b.mlp_out_b});
    s.blocks.push_back(b);
  }
  L.begin_unit("head");
  s.final_norm_w = L.add("transformer.ln_f.weight", {C});
  s.final_norm_b = L.add("transformer.ln_f.bias", {C});
  s.ones.push_back(s.final_norm_w);
  s.zeros.push_back(s.final_norm_b);
  s.head_w = s.tok_emb;
  return s;
}

}  // namespace farthing::models

// llama.cpp — see llama.h. Hyper-parameters are those of each model's published config.json.
#include "models/llama/llama.h"

#include <string>

#include "framework/core/error.h"

namespace farthing::models {

namespace {

ModelConfig llama(const char* name, int64_t vocab, int64_t dim, int64_t hidden, int64_t layers,
                  int64_t heads, int64_t kv_heads, int64_t max_seq, float eps, float theta,
                  bool tied) {
  ModelConfig c;
  c.name = name;
  c.family = ModelFamily::kLlama;
  c.vocab_size = vocab;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.max_seq_len = max_seq;
  c.norm_eps = eps;
  c.rope_theta = theta;
  c.tied_embeddings = tied;
  return c;
}

RopeScaling llama3_scaling(float factor) { return RopeScaling{factor, 1.0f, 4.0f, 8192}; }

}  // namespace

ModelConfig llama_stories260k() {
  return llama("stories260K", 512, 64, 172, 5, 8, 4, 512, 1e-5f, 10000.0f, true);
}
ModelConfig smollm2_135m() {
  return llama("SmolLM2-135M", 49152, 576, 1536, 30, 9, 3, 8192, 1e-5f, 100000.0f, true);
}
ModelConfig smollm2_360m() {
  return llama("SmolLM2-360M", 49152, 960, 2560, 32, 15, 5, 8192, 1e-5f, 100000.0f, true);
}
ModelConfig smollm2_1_7b() {
  return llama("SmolLM2-1.7B", 49152, 2048, 8192, 24, 32, 32, 8192, 1e-5f, 130000.0f, true);
}
ModelConfig llama3_2_1b() {
  ModelConfig c = llama("Llama-3.2-1B", 128256, 2048, 8192, 16, 32, 8, 131072, 1e-5f, 500000.0f, true);
  c.rope_scaling = llama3_scaling(32.0f);
  return c;
}
ModelConfig llama3_2_3b() {
  ModelConfig c = llama("Llama-3.2-3B", 128256, 3072, 8192, 28, 24, 8, 131072, 1e-5f, 500000.0f, true);
  c.rope_scaling = llama3_scaling(32.0f);
  return c;
}
ModelConfig llama3_1_8b() {
  ModelConfig c = llama("Llama-3.1-8B", 128256, 4096, 14336, 32, 32, 8, 131072, 1e-5f, 500000.0f, false);
  c.rope_scaling = llama3_scaling(8.0f);
  return c;
}
ModelConfig llama3_1_70b() {
  ModelConfig c = llama("Llama-3.1-70B", 128256, 8192, 28672, 80, 64, 8, 131072, 1e-5f, 500000.0f, false);
  c.rope_scaling = llama3_scaling(8.0f);
  return c;
}
ModelConfig qwen2_5_0_5b() {
  ModelConfig c = llama("Qwen2.5-0.5B", 151936, 896, 4864, 24, 14, 2, 32768, 1e-6f, 1000000.0f, true);
  c.qkv_bias = true;
  return c;
}
ModelConfig qwen2_5_1_5b() {
  ModelConfig c = llama("Qwen2.5-1.5B", 151936, 1536, 8960, 28, 12, 2, 131072, 1e-6f, 1000000.0f, true);
  c.qkv_bias = true;
  return c;
}
ModelConfig qwen2_5_7b() {
  ModelConfig c = llama("Qwen2.5-7B", 152064, 3584, 18944, 28, 28, 4, 131072, 1e-6f, 1000000.0f, false);
  c.qkv_bias = true;
  return c;
}

namespace {
// Qwen3: Qwen2.5's block without the qkv bias, with q/k norms and head_dim 128 at every size.
ModelConfig qwen3(const char* name, int64_t dim, int64_t hidden, int64_t layers, int64_t heads, bool tied) {
  ModelConfig c = llama(name, 151936, dim, hidden, layers, heads, 8, 40960, 1e-6f, 1000000.0f, tied);
  c.qk_norm = true;
  if (dim / heads != 128) c.head_size = 128;
  return c;
}
}  // namespace

namespace {
// Gemma 3 (text): 262k vocabulary (262,144 for 1B; the multimodal sizes' text models add 64
// image tokens), head_dim 256 scaled by query_pre_attn_scalar 256, five sliding-window layers to
// one global one (RoPE base 10,000 local, 1,000,000 global), a tied head.
ModelConfig gemma3(const char* name, int64_t vocab, int64_t dim, int64_t hidden, int64_t layers, int64_t heads,
                   int64_t kv_heads, int64_t max_seq, int64_t window) {
  ModelConfig c = llama(name, vocab, dim, hidden, layers, heads, kv_heads, max_seq, 1e-6f, 1000000.0f, true);
  c.qk_norm = c.norm_plus_one = c.sandwich_norms = c.gelu_gate = c.scaled_embedding = true;
  if (dim / heads != 256) c.head_size = 256;
  c.query_pre_attn_scalar = 256;
  c.sliding_window = window;
  c.rope_local_theta = 10000.0f;
  c.sliding_layers.assign(size_t(layers), false);
  for (int64_t l = 0; l < layers; ++l) c.sliding_layers[size_t(l)] = (l + 1) % 6 != 0;
  return c;
}
}  // namespace

ModelConfig gemma3_1b() { return gemma3("Gemma-3-1B", 262144, 1152, 6912, 26, 4, 1, 32768, 512); }
ModelConfig gemma3_4b() {
  ModelConfig c = gemma3("Gemma-3-4B", 262208, 2560, 10240, 34, 8, 4, 131072, 1024);
  c.rope_scaling.factor = 8.0f;  // linear, on the global layers
  c.rope_scaling.linear = true;
  return c;
}

ModelConfig qwen3_0_6b() { return qwen3("Qwen3-0.6B", 1024, 3072, 28, 16, true); }
ModelConfig qwen3_1_7b() { return qwen3("Qwen3-1.7B", 2048, 6144, 28, 16, true); }
ModelConfig qwen3_4b() { return qwen3("Qwen3-4B", 2560, 9728, 36, 32, true); }
ModelConfig qwen3_8b() { return qwen3("Qwen3-8B", 4096, 12288, 36, 32, false); }

TransformerSpec llama_spec(const ModelConfig& config) {
  config.validate();
  FARTHING_CHECK(config.family == ModelFamily::kLlama, "llama_spec called for non-Llama model '",
                 config.name, "'");
  TransformerSpec s;
  s.config = config;
  s.orientation = WeightOrientation::kOutIn;
  FlatLayout& L = s.layout;
  const int64_t C = config.dim, H = config.hidden_dim, D = config.head_dim();
  const int64_t q = config.n_heads * D, kv = config.n_kv_heads * D;
  L.begin_unit("embedding");
  s.tok_emb = L.add("model.embed_tokens.weight", {config.vocab_size, C});
  std::vector<int64_t> norms;  // every norm weight's offset
  for (int64_t i = 0; i < config.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    BlockOffsets b;
    L.begin_unit("block." + std::to_string(i));
    b.norm1_w = L.add(p + "input_layernorm.weight", {C});
    b.qkv_w = L.add(p + "self_attn.q_proj.weight", {q, C});
    L.add(p + "self_attn.k_proj.weight", {kv, C}, LayoutAlign::kPacked);
    L.add(p + "self_attn.v_proj.weight", {kv, C}, LayoutAlign::kPacked);
    if (config.qkv_bias) {
      b.qkv_b = L.add(p + "self_attn.q_proj.bias", {q});
      L.add(p + "self_attn.k_proj.bias", {kv}, LayoutAlign::kPacked);
      L.add(p + "self_attn.v_proj.bias", {kv}, LayoutAlign::kPacked);
      s.zeros.push_back(b.qkv_b);
    }
    b.attn_out_w = L.add(p + "self_attn.o_proj.weight", {C, q});
    if (config.qk_norm) {
      b.q_norm_w = L.add(p + "self_attn.q_norm.weight", {D});
      b.k_norm_w = L.add(p + "self_attn.k_norm.weight", {D});
      norms.push_back(b.q_norm_w);
      norms.push_back(b.k_norm_w);
    }
    if (config.sandwich_norms) {  // Gemma 3: post_attention_layernorm is attention's post-norm
      b.attn_post_norm_w = L.add(p + "post_attention_layernorm.weight", {C});
      b.norm2_w = L.add(p + "pre_feedforward_layernorm.weight", {C});
      norms.push_back(b.attn_post_norm_w);
    } else {
      b.norm2_w = L.add(p + "post_attention_layernorm.weight", {C});
    }
    b.mlp_in_w = L.add(p + "mlp.gate_proj.weight", {H, C});
    L.add(p + "mlp.up_proj.weight", {H, C}, LayoutAlign::kPacked);
    b.mlp_out_w = L.add(p + "mlp.down_proj.weight", {C, H});
    if (config.sandwich_norms) {
      b.mlp_post_norm_w = L.add(p + "post_feedforward_layernorm.weight", {C});
      norms.push_back(b.mlp_post_norm_w);
    }
    norms.push_back(b.norm1_w);
    norms.push_back(b.norm2_w);
    s.blocks.push_back(b);
  }
  L.begin_unit("head");
  s.final_norm_w = L.add("model.norm.weight", {C});
  norms.push_back(s.final_norm_w);
  // A norm's gain starts at 1: the weight itself, or Gemma 3's w of the gain 1 + w at 0.
  std::vector<int64_t>& initial = config.norm_plus_one ? s.zeros : s.ones;
  initial.insert(initial.end(), norms.begin(), norms.end());
  s.head_w = config.tied_embeddings ? s.tok_emb : L.add("lm_head.weight", {config.vocab_size, C});
  return s;
}

}  // namespace farthing::models

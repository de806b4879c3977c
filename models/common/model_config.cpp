// model_config.cpp — see model_config.h.
#include "models/common/model_config.h"

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace farthing::models {

void ModelConfig::validate() const {
  FARTHING_CHECK(vocab_size > 0 && dim > 0 && hidden_dim > 0 && n_layers > 0 && n_heads > 0 &&
                     n_kv_heads > 0 && max_seq_len > 0,
                 "model '", name, "': every size must be positive: vocab_size(", vocab_size,
                 ") dim(", dim, ") hidden_dim(", hidden_dim, ") n_layers(", n_layers, ") n_heads(",
                 n_heads, ") n_kv_heads(", n_kv_heads, ") max_seq_len(", max_seq_len, ")");
  FARTHING_CHECK(head_size > 0 || dim % n_heads == 0, "model '", name, "': dim(", dim, ") % n_heads(", n_heads,
                 ") != 0 and no head_dim is given");
  FARTHING_CHECK(head_size >= 0, "model '", name, "': head_dim(", head_size, ") must be positive");
  FARTHING_CHECK(family != ModelFamily::kGpt2 || (head_size == 0 && !qk_norm), "model '", name,
                 "': GPT-2 has neither a decoupled head_dim nor q/k norms");
  FARTHING_CHECK(n_heads % n_kv_heads == 0, "model '", name, "': n_heads(", n_heads,
                 ") % n_kv_heads(", n_kv_heads, ") != 0");
  FARTHING_CHECK(family != ModelFamily::kLlama || head_dim() % 2 == 0, "model '", name,
                 "': rotary embedding needs an even head_dim, got ", head_dim());
  FARTHING_CHECK(family != ModelFamily::kGpt2 || (n_kv_heads == n_heads && tied_embeddings),
                 "model '", name, "': GPT-2 has n_kv_heads == n_heads and a tied head");
}

int64_t ModelConfig::num_params() const {
  const int64_t C = dim, H = hidden_dim, hd = head_dim();
  int64_t block = 0, outer = vocab_size * C;
  if (family == ModelFamily::kGpt2) {
    block = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * H + H) + (H * C + C);
    outer += max_seq_len * C + 2 * C;
  } else {
    block = 2 * C + C * (n_heads * hd) + 2 * C * (n_kv_heads * hd) + (n_heads * hd) * C + 3 * C * H;
    if (qkv_bias) block += (n_heads + 2 * n_kv_heads) * hd;
    if (qk_norm) block += 2 * hd;
    outer += C + (tied_embeddings ? 0 : vocab_size * C);
  }
  return outer + n_layers * block;
}

double training_flops_per_step(const ModelConfig& c, int64_t batch, int64_t seq) {
  const double C = double(c.dim), H = double(c.hidden_dim), Sq = double(c.qkv_dim());
  const double F = c.family == ModelFamily::kLlama ? 2 * H : H;
  const double tokens = double(batch * seq);
  const double A = double(c.attn_dim());
  const double gemm_params = double(c.n_layers) * (C * Sq + A * C + C * F + H * C) + double(c.vocab_size) * C;
  // Causal attention: q k^T and p v over T(T+1)/2 pairs per head; backward twice forward.
  const double T = double(seq);
  const double attn_fwd = 4.0 * double(batch) * double(c.n_heads) * double(c.head_dim()) * T * (T + 1) / 2;
  return 6.0 * gemm_params * tokens + 3.0 * attn_fwd * double(c.n_layers);
}

ModelConfig config_from_hf_json(const std::string& json_text, const std::string& name) {
  const auto j = nlohmann::json::parse(json_text);
  ModelConfig c;
  c.name = name;
  const std::string type = j.value("model_type", "");
  if (type == "gpt2") {
    c.family = ModelFamily::kGpt2;
    c.vocab_size = j.at("vocab_size");
    c.dim = j.at("n_embd");
    c.n_layers = j.at("n_layer");
    c.n_heads = c.n_kv_heads = j.at("n_head");
    c.hidden_dim = j.contains("n_inner") && !j["n_inner"].is_null() ? int64_t(j["n_inner"]) : 4 * c.dim;
    c.max_seq_len = j.at("n_positions");
    c.norm_eps = j.value("layer_norm_epsilon", 1e-5f);
    c.tied_embeddings = true;
  } else {
    FARTHING_CHECK(type == "llama" || type == "qwen2" || type == "qwen3" || type == "mistral",
                   "config.json model_type '", type, "' is not supported (llama, mistral, qwen2, qwen3, gpt2)");
    c.family = ModelFamily::kLlama;
    c.vocab_size = j.at("vocab_size");
    c.dim = j.at("hidden_size");
    c.hidden_dim = j.at("intermediate_size");
    c.n_layers = j.at("num_hidden_layers");
    c.n_heads = j.at("num_attention_heads");
    c.n_kv_heads = j.value("num_key_value_heads", c.n_heads);
    c.max_seq_len = j.at("max_position_embeddings");
    c.norm_eps = j.value("rms_norm_eps", 1e-6f);
    c.tied_embeddings = j.value("tie_word_embeddings", false);
    c.qkv_bias = type == "qwen2" || j.value("attention_bias", false);
    c.qk_norm = type == "qwen3";
    FARTHING_CHECK(!j.value("use_sliding_window", false), "config.json use_sliding_window: true is not supported "
                   "for model_type '", type, "' (every layer attends to the whole causal prefix)");
    // transformers < 5 writes rope_theta and rope_scaling; 5.x nests both in rope_parameters.
    c.rope_theta = j.value("rope_theta", 10000.0f);
    nlohmann::json rope = j.contains("rope_scaling") ? j["rope_scaling"] : nlohmann::json();
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
      rope = j["rope_parameters"];
      c.rope_theta = rope.value("rope_theta", c.rope_theta);
    }
    if (rope.is_object()) {
      const std::string rt = rope.value("rope_type", rope.value("type", std::string("default")));
      FARTHING_CHECK(rt == "llama3" || rt == "default", "rope type '", rt,
                     "' is not supported (default, llama3)");
      if (rt == "llama3") {
        c.rope_scaling.factor = rope.at("factor");
        c.rope_scaling.low_freq_factor = rope.value("low_freq_factor", 1.0f);
        c.rope_scaling.high_freq_factor = rope.value("high_freq_factor", 4.0f);
        c.rope_scaling.original_max_position =
            rope.value("original_max_position_embeddings", int64_t(8192));
      }
    }
    // A head_dim other than hidden_size / num_attention_heads (Qwen3-0.6B and -4B) is kept; the
    // one it would be anyway is not, so such configs read back as they always have.
    if (j.contains("head_dim") && !j["head_dim"].is_null()) {
      const int64_t hd = j["head_dim"];
      FARTHING_CHECK(hd > 0, "config.json head_dim(", hd, ") must be positive");
      if (c.dim % c.n_heads != 0 || hd != c.dim / c.n_heads) c.head_size = hd;
    }
  }
  c.validate();
  return c;
}

}  // namespace farthing::models

namespace farthing::models {

std::string config_to_hf_json(const ModelConfig& c) {
  nlohmann::json j;
  if (c.family == ModelFamily::kGpt2) {
    j["model_type"] = "gpt2";
    j["architectures"] = {"GPT2LMHeadModel"};
    j["vocab_size"] = c.vocab_size;
    j["n_embd"] = c.dim;
    j["n_layer"] = c.n_layers;
    j["n_head"] = c.n_heads;
    j["n_inner"] = c.hidden_dim;
    j["n_positions"] = c.max_seq_len;
    j["n_ctx"] = c.max_seq_len;
    j["layer_norm_epsilon"] = c.norm_eps;
    j["activation_function"] = "gelu_new";
  } else {
    const char* type = c.qk_norm ? "qwen3" : c.qkv_bias ? "qwen2" : "llama";
    j["model_type"] = type;
    j["architectures"] = {c.qk_norm ? "Qwen3ForCausalLM" : c.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
    if (c.qk_norm) j["attention_bias"] = c.qkv_bias;
    // Qwen3Config's head_dim defaults to 128, not hidden_size / num_attention_heads: always say it.
    if (c.qk_norm || c.head_size > 0) j["head_dim"] = c.head_dim();
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.dim;
    j["intermediate_size"] = c.hidden_dim;
    j["num_hidden_layers"] = c.n_layers;
    j["num_attention_heads"] = c.n_heads;
    j["num_key_value_heads"] = c.n_kv_heads;
    j["max_position_embeddings"] = c.max_seq_len;
    j["rms_norm_eps"] = c.norm_eps;
    j["tie_word_embeddings"] = c.tied_embeddings;
    j["rope_theta"] = c.rope_theta;
    j["hidden_act"] = "silu";
    if (c.rope_scaling.factor > 0.0f) {
      j["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", c.rope_scaling.factor},
                           {"low_freq_factor", c.rope_scaling.low_freq_factor},
                           {"high_freq_factor", c.rope_scaling.high_freq_factor},
                           {"original_max_position_embeddings", c.rope_scaling.original_max_position}};
    }
  }
  j["torch_dtype"] = "float32";
  return j.dump(2);
}

}  // namespace farthing::models

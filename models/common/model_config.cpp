// model_config.cpp — see model_config.h.
#include "models/common/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>

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
  FARTHING_CHECK(family != ModelFamily::kGpt2 || !(norm_plus_one || sandwich_norms || gelu_gate || scaled_embedding ||
                                                   query_pre_attn_scalar > 0 || !sliding_layers.empty()),
                 "model '", name, "': GPT-2 has none of Gemma 3's block features");
  FARTHING_CHECK(sliding_layers.empty() || int64_t(sliding_layers.size()) == n_layers, "model '", name,
                 "': layer_types names ", sliding_layers.size(), " layers, the model has ", n_layers);
  FARTHING_CHECK(sliding_window >= 0 && query_pre_attn_scalar >= 0, "model '", name, "': sliding_window(",
                 sliding_window, ") and query_pre_attn_scalar(", query_pre_attn_scalar, ") must not be negative");
  for (int64_t l = 0; l < n_layers; ++l) {
    FARTHING_CHECK(!is_sliding(l) || sliding_window > 0, "model '", name, "': layer ", l,
                   " is a sliding_attention layer but sliding_window is ", sliding_window);
  }
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
    if (sandwich_norms) block += 2 * C;
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

namespace {

bool set_and_not_null(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// One RoPE type's parameters (transformers' rope_parameters entry, or the older rope_scaling):
// default, llama3 or linear.
RopeScaling rope_scaling_from(const nlohmann::json& rope, const char* key) {
  RopeScaling s;
  if (!rope.is_object()) return s;
  const std::string rt = rope.value("rope_type", rope.value("type", std::string("default")));
  FARTHING_CHECK(rt == "llama3" || rt == "linear" || rt == "default", "config.json ", key, ": rope type '", rt,
                 "' is not supported (default, linear, llama3)");
  if (rt == "default") return s;
  s.factor = rope.at("factor");
  FARTHING_CHECK(s.factor > 0.0f, "config.json ", key, ": rope factor(", s.factor, ") must be positive");
  s.linear = rt == "linear";
  if (rt == "llama3") {
    s.low_freq_factor = rope.value("low_freq_factor", 1.0f);
    s.high_freq_factor = rope.value("high_freq_factor", 4.0f);
    s.original_max_position = rope.value("original_max_position_embeddings", int64_t(8192));
  }
  return s;
}

// c.sliding_layers from config.json's layer_types (sliding_attention or full_attention per layer);
// false when the config has none, and the family's older key decides.
bool read_layer_types(const nlohmann::json& j, ModelConfig& c) {
  if (!set_and_not_null(j, "layer_types")) return false;
  const auto& types = j["layer_types"];
  FARTHING_CHECK(types.is_array() && int64_t(types.size()) == c.n_layers, "config.json layer_types must list ",
                 c.n_layers, " layers (num_hidden_layers), got ", types.dump());
  c.sliding_layers.assign(size_t(c.n_layers), false);
  for (size_t l = 0; l < types.size(); ++l) {
    const std::string t = types[l];
    FARTHING_CHECK(t == "sliding_attention" || t == "full_attention", "config.json layer_types[", l, "] '", t,
                   "' is not sliding_attention or full_attention");
    c.sliding_layers[l] = t == "sliding_attention";
  }
  return true;
}

// Qwen3's sliding window (use_sliding_window: true): the layers from max_window_layers on attend
// through sliding_window (or those layer_types names sliding_attention), with the same RoPE as the
// others.
void qwen_sliding_layers_from_hf_json(const nlohmann::json& j, const std::string& type, ModelConfig& c) {
  FARTHING_CHECK(type == "qwen3", "config.json use_sliding_window: true is not supported for model_type '", type,
                 "' (qwen3 only; every layer attends to the whole causal prefix)");
  FARTHING_CHECK(set_and_not_null(j, "sliding_window") && j["sliding_window"].is_number_integer() &&
                     int64_t(j["sliding_window"]) > 0,
                 "config.json use_sliding_window: true needs a positive whole sliding_window, got ",
                 j.contains("sliding_window") ? j["sliding_window"].dump() : std::string("none"));
  c.sliding_window = j["sliding_window"];
  c.sliding_layers.assign(size_t(c.n_layers), false);
  if (!read_layer_types(j, c)) {
    const int64_t first = j.value("max_window_layers", int64_t(28));
    for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers[size_t(l)] = l >= first;
  }
}

// Gemma 3's text model (transformers' Gemma3TextConfig, whose defaults are used where a key is
// absent): RMSNorm gains 1 + w, sandwich norms, GeGLU, q/k norms, scaled queries and embedding, a
// tied head, and sliding-window layers with their own RoPE base.
void gemma3_from_hf_json(const nlohmann::json& j, ModelConfig& c) {
  c.family = ModelFamily::kLlama;
  c.vocab_size = j.value("vocab_size", int64_t(262208));
  c.dim = j.at("hidden_size");
  c.hidden_dim = j.at("intermediate_size");
  c.n_layers = j.at("num_hidden_layers");
  c.n_heads = j.at("num_attention_heads");
  c.n_kv_heads = j.value("num_key_value_heads", c.n_heads);
  c.max_seq_len = j.value("max_position_embeddings", int64_t(131072));
  c.norm_eps = j.value("rms_norm_eps", 1e-6f);
  c.tied_embeddings = j.value("tie_word_embeddings", true);
  c.qkv_bias = j.value("attention_bias", false);
  c.qk_norm = c.norm_plus_one = c.sandwich_norms = c.gelu_gate = c.scaled_embedding = true;
  const int64_t hd = j.value("head_dim", int64_t(256));
  FARTHING_CHECK(hd > 0, "config.json head_dim(", hd, ") must be positive");
  if (c.dim % c.n_heads != 0 || hd != c.dim / c.n_heads) c.head_size = hd;
  const std::string act = j.value("hidden_activation", std::string("gelu_pytorch_tanh"));
  FARTHING_CHECK(act == "gelu_pytorch_tanh", "config.json hidden_activation '", act,
                 "' is not supported for gemma3_text (gelu_pytorch_tanh)");
  FARTHING_CHECK(!set_and_not_null(j, "attn_logit_softcapping"),
                 "config.json attn_logit_softcapping must be null for gemma3_text (soft-capped scores are not supported)");
  FARTHING_CHECK(!set_and_not_null(j, "final_logit_softcapping"),
                 "config.json final_logit_softcapping must be null for gemma3_text (soft-capped logits are not supported)");
  FARTHING_CHECK(!j.value("use_bidirectional_attention", false),
                 "config.json use_bidirectional_attention: true is not supported (farthing's attention is causal)");
  const nlohmann::json& qs = j.contains("query_pre_attn_scalar") ? j["query_pre_attn_scalar"] : nlohmann::json(256);
  FARTHING_CHECK(qs.is_number() && double(qs) > 0 && double(qs) == double(int64_t(double(qs))),
                 "config.json query_pre_attn_scalar must be a positive whole number, got ", qs.dump());
  c.query_pre_attn_scalar = int64_t(double(qs));
  c.sliding_window = set_and_not_null(j, "sliding_window") ? int64_t(j["sliding_window"]) : 0;
  // layer_types, or the older sliding_window_pattern: every pattern-th layer is global.
  c.sliding_layers.assign(size_t(c.n_layers), false);
  if (!read_layer_types(j, c)) {
    const int64_t pattern = j.value("sliding_window_pattern", int64_t(6));
    FARTHING_CHECK(pattern > 0, "config.json sliding_window_pattern(", pattern, ") must be positive");
    for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers[size_t(l)] = (l + 1) % pattern != 0;
  }
  // RoPE: transformers 5.x writes rope_parameters per layer type; older configs write rope_theta,
  // rope_local_base_freq and rope_scaling (the global layers' only).
  c.rope_theta = j.value("rope_theta", 1000000.0f);
  c.rope_local_theta = j.value("rope_local_base_freq", 10000.0f);
  if (set_and_not_null(j, "rope_scaling")) c.rope_scaling = rope_scaling_from(j["rope_scaling"], "rope_scaling");
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const auto& rp = j["rope_parameters"];
    if (rp.contains("full_attention")) {
      c.rope_theta = rp["full_attention"].value("rope_theta", c.rope_theta);
      c.rope_scaling = rope_scaling_from(rp["full_attention"], "rope_parameters.full_attention");
    }
    if (rp.contains("sliding_attention")) {
      c.rope_local_theta = rp["sliding_attention"].value("rope_theta", c.rope_local_theta);
      FARTHING_CHECK(rope_scaling_from(rp["sliding_attention"], "rope_parameters.sliding_attention").factor == 0.0f,
                     "config.json rope_parameters.sliding_attention: only rope type default is supported on sliding layers");
    }
  }
  FARTHING_CHECK(c.rope_scaling.factor == 0.0f || c.rope_scaling.linear,
                 "config.json: gemma3_text supports rope type linear or default on its global layers, not llama3");
}

}  // namespace

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
  } else if (type == "gemma3_text") {
    gemma3_from_hf_json(j, c);
  } else if (type == "gemma3") {
    FARTHING_FAIL("config.json model_type 'gemma3' is Gemma 3's image-text checkpoint: farthing trains its text "
                  "model, a folder with model_type gemma3_text (Gemma3ForCausalLM) and its weights");
  } else {
    FARTHING_CHECK(type == "llama" || type == "qwen2" || type == "qwen3" || type == "mistral",
                   "config.json model_type '", type, "' is not supported (llama, mistral, qwen2, qwen3, gemma3_text, gpt2)");
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
    if (j.value("use_sliding_window", false)) qwen_sliding_layers_from_hf_json(j, type, c);
    // transformers < 5 writes rope_theta and rope_scaling; 5.x nests both in rope_parameters.
    c.rope_theta = j.value("rope_theta", 10000.0f);
    nlohmann::json rope = j.contains("rope_scaling") ? j["rope_scaling"] : nlohmann::json();
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
      rope = j["rope_parameters"];
      c.rope_theta = rope.value("rope_theta", c.rope_theta);
    }
    c.rope_scaling = rope_scaling_from(rope, j.contains("rope_parameters") ? "rope_parameters" : "rope_scaling");
    FARTHING_CHECK(!c.rope_scaling.linear, "config.json rope type 'linear' is supported for gemma3_text only "
                   "(model_type '", type, "': default, llama3)");
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

namespace {

// Gemma 3's config.json in transformers 5.x's form (rope_parameters per layer type, layer_types).
void gemma3_to_hf_json(const ModelConfig& c, nlohmann::json& j) {
  j["model_type"] = "gemma3_text";
  j["architectures"] = {"Gemma3ForCausalLM"};
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim();
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.norm_eps;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["attention_bias"] = c.qkv_bias;
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["query_pre_attn_scalar"] = c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : c.head_dim();
  j["sliding_window"] = c.sliding_window;
  j["attn_logit_softcapping"] = nullptr;
  j["final_logit_softcapping"] = nullptr;
  nlohmann::json types = nlohmann::json::array();
  for (int64_t l = 0; l < c.n_layers; ++l) types.push_back(c.is_sliding(l) ? "sliding_attention" : "full_attention");
  j["layer_types"] = types;
  nlohmann::json global = {{"rope_type", "default"}, {"rope_theta", c.rope_theta}};
  if (c.rope_scaling.factor > 0.0f) {
    global["rope_type"] = "linear";
    global["factor"] = c.rope_scaling.factor;
  }
  j["rope_parameters"] = {{"full_attention", global},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c.rope_local_theta}}}};
}

}  // namespace

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
  } else if (c.sandwich_norms) {
    gemma3_to_hf_json(c, j);
  } else {
    const char* type = c.qk_norm ? "qwen3" : c.qkv_bias ? "qwen2" : "llama";
    j["model_type"] = type;
    j["architectures"] = {c.qk_norm ? "Qwen3ForCausalLM" : c.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
    if (c.qk_norm) j["attention_bias"] = c.qkv_bias;
    if (!c.sliding_layers.empty()) {  // Qwen3's sliding window: the layer kinds said outright
      j["use_sliding_window"] = true;
      j["sliding_window"] = c.sliding_window;
      nlohmann::json types = nlohmann::json::array();
      int64_t first_sliding = c.n_layers;
      for (int64_t l = 0; l < c.n_layers; ++l) {
        types.push_back(c.is_sliding(l) ? "sliding_attention" : "full_attention");
        if (c.is_sliding(l)) first_sliding = std::min(first_sliding, l);
      }
      j["layer_types"] = types;
      j["max_window_layers"] = first_sliding;
    }
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

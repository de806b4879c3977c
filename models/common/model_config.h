// model_config.h — the architecture of a decoder-only transformer: one struct for both
// families (Llama-style and GPT-2), filled by a preset per size (models/llama, models/gpt2)
// or parsed from a Hugging Face config.json.
//
// Relies on: framework/core/error.h, nlohmann/json. Tested by: tests/models/test_flat_layout.cpp, tests/train/recipe/test_recipe_files.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace farthing::models {

enum class ModelFamily : uint8_t { kLlama, kGpt2 };

// RoPE frequency scaling: Llama 3.x's (Hugging Face's rope_type "llama3"), or "linear" (every
// frequency divided by factor: Gemma 3 4B's global layers).
struct RopeScaling {
  float factor = 0.0f;  // 0: no scaling
  float low_freq_factor = 1.0f;  // llama3's
  float high_freq_factor = 4.0f;
  int64_t original_max_position = 8192;
  bool linear = false;  // rope_type "linear"; else "llama3"
};

struct ModelConfig {
  std::string name;
  ModelFamily family = ModelFamily::kLlama;
  int64_t vocab_size = 0;
  int64_t dim = 0;         // hidden size C
  int64_t hidden_dim = 0;  // MLP intermediate size
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // == n_heads without grouped-query attention
  int64_t max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;  // Llama family only
  RopeScaling rope_scaling{};
  bool qkv_bias = false;         // Qwen2 has biases on q, k and v
  bool qk_norm = false;          // Qwen3: RMSNorm over each q and k head before RoPE (q_norm, k_norm)
  bool tied_embeddings = false;  // output head shares the token embedding
  // Each head's width when it is not dim / n_heads (Qwen3-0.6B and -4B: 128); 0: dim / n_heads.
  int64_t head_size = 0;
  // Gemma 3 (model_type gemma3_text):
  bool norm_plus_one = false;     // every RMSNorm's gain is 1 + w, w the stored weight (starts at 0)
  bool sandwich_norms = false;    // a norm after attention and after the MLP, before each residual add
  bool gelu_gate = false;         // the MLP is GeGLU with tanh GELU instead of SwiGLU
  bool scaled_embedding = false;  // the embedding's rows are multiplied by sqrt(dim)
  int64_t query_pre_attn_scalar = 0;  // attention scores are (q . k) / sqrt(this); 0: head_dim
  int64_t sliding_window = 0;         // keys visible to query i on a sliding layer: i - window + 1 .. i
  std::vector<bool> sliding_layers;   // per layer, whether it attends through the window (empty: none)
  float rope_local_theta = 0.0f;      // Gemma 3: RoPE base of the sliding layers, which rope_scaling skips; 0: as
                                      // the global layers (Qwen's sliding window)

  bool is_sliding(int64_t layer) const { return !sliding_layers.empty() && sliding_layers[size_t(layer)]; }
  // The window of layer `layer`'s attention (AttentionShape::window): 0 on a global layer.
  int64_t window_of(int64_t layer) const { return is_sliding(layer) ? sliding_window : 0; }

  int64_t head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int64_t qkv_dim() const { return (n_heads + 2 * n_kv_heads) * head_dim(); }
  // Attention's output width, the out projection's input: n_heads * head_dim (dim unless head_size is set).
  int64_t attn_dim() const { return n_heads * head_dim(); }
  // Throws farthing::Error naming the inconsistent fields.
  void validate() const;
  // Number of parameters (tied head counted once).
  int64_t num_params() const;
};

// Model FLOPs of one forward + backward over batch sequences of seq tokens: 6 per parameter of
// every GEMM (the token embedding is a lookup, not counted; the head is) per token, plus causal
// attention's q k^T and p v (backward twice forward). What MFU divides by; recomputation
// (activation checkpointing) is not counted, as is usual for MFU.
double training_flops_per_step(const ModelConfig& c, int64_t batch, int64_t seq);

// From the text of a Hugging Face config.json (model_type llama, mistral, qwen2, qwen3, gemma3_text or gpt2).
ModelConfig config_from_hf_json(const std::string& json_text, const std::string& name = "");
// The inverse: a config.json transformers loads (model_type gemma3_text with Gemma 3's block, qwen3
// with q/k norms, qwen2 with qkv biases, else llama; gpt2); config_from_hf_json(config_to_hf_json(c)) == c up to the name.
std::string config_to_hf_json(const ModelConfig& config);

}  // namespace farthing::models

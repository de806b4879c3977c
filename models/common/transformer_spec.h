// transformer_spec.h — what the generic transformer needs to know about a family: its
// config, its flat layout (Hugging Face names), where each block's weights start, and how
// projection weights are stored. Built by models/llama and models/gpt2.
//
// Fused projections rely on adjacency in the layout: Llama's q_proj, k_proj, v_proj weights
// (and biases) are consecutive and unpadded, so together they are one (Sq, C) matrix; the
// same holds for gate_proj and up_proj. GPT-2's c_attn is already fused.
// Tested by: tests/models/test_flat_layout.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/common/flat_layout.h"
#include "models/common/model_config.h"

namespace farthing::models {

// How a projection weight W of a layer mapping K inputs to N outputs is stored.
enum class WeightOrientation : uint8_t {
  kOutIn,  // (N, K): torch.nn.Linear (Llama, all heads)
  kInOut,  // (K, N): GPT-2's Conv1D
};

// Global flat offsets; -1 where the family has no such tensor.
struct BlockOffsets {
  int64_t norm1_w = -1, norm1_b = -1;
  int64_t qkv_w = -1, qkv_b = -1;          // (Sq, C) / (C, Sq), bias (Sq)
  int64_t q_norm_w = -1, k_norm_w = -1;    // (head_dim) each: Qwen3's per-head q and k norms
  int64_t attn_out_w = -1, attn_out_b = -1;
  int64_t norm2_w = -1, norm2_b = -1;
  int64_t mlp_in_w = -1, mlp_in_b = -1;    // Llama: [gate; up] (2H, C); GPT-2: c_fc (C, H)
  int64_t mlp_out_w = -1, mlp_out_b = -1;
  // Gemma 3's sandwich norms: on attention's output and on the MLP's, before each residual add.
  int64_t attn_post_norm_w = -1, mlp_post_norm_w = -1;
};

// One of a block's four linear layers as a GEMM: its weight's offset, K in, N out.
struct BlockProjection {
  int64_t weight = -1;
  int64_t k = 0, n = 0;
  bool attention = false;  // qkv or attention output (else an MLP projection)
};

// A block's projections in order: qkv, attention output, MLP in (Llama: gate and up fused), MLP out.
inline std::array<BlockProjection, 4> block_projections(const ModelConfig& c, const BlockOffsets& b) {
  const int64_t C = c.dim, H = c.hidden_dim;
  const int64_t F = c.family == ModelFamily::kLlama ? 2 * H : H;
  return {{{b.qkv_w, C, c.qkv_dim(), true}, {b.attn_out_w, c.attn_dim(), C, true}, {b.mlp_in_w, C, F, false},
           {b.mlp_out_w, H, C, false}}};
}

struct TransformerSpec {
  ModelConfig config;
  FlatLayout layout;
  WeightOrientation orientation = WeightOrientation::kOutIn;
  int64_t tok_emb = -1;  // (V, C)
  int64_t pos_emb = -1;  // (max_seq_len, C), GPT-2 only
  std::vector<BlockOffsets> blocks;
  int64_t final_norm_w = -1, final_norm_b = -1;
  int64_t head_w = -1;  // (V, C); == tok_emb when tied
  // Offsets of tensors initialised to 1 (norm weights) and 0 (biases).
  std::vector<int64_t> ones, zeros;
};

}  // namespace farthing::models

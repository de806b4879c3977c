// block_forward.cpp — see block_forward.h. Shapes in comments use R = rows, C = dim,
// H = hidden, F = H (GPT-2) or 2H (Llama gate|up), Sq = (Hq + 2 Hkv) * head_dim.
#include "models/common/block_forward.h"

#include <cmath>

#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::models {

void block_norm_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, ActRef out, float* mean,
                        float* rstd, ActRef x, int64_t w, int64_t b, int64_t rows, NormSlot slot) {
  const ModelConfig& c = spec.config;
  if (c.family == ModelFamily::kGpt2) {
    ops.layernorm_forward(out, mean, rstd, x, hooks.vector(w), hooks.vector(b), rows, c.dim, c.norm_eps);
  } else {
    ops.rmsnorm_forward(out, rstd, x, norm_weight(c, hooks, slot, w, c.dim), rows, c.dim, c.norm_eps);
  }
}

const float* norm_weight(const ModelConfig& c, BlockHooks& hooks, NormSlot slot, int64_t offset, int64_t n) {
  return c.norm_plus_one ? hooks.norm_gain(slot, offset, n) : hooks.vector(offset);
}

void norm_gain_plus_one(NnOps& ops, float* gain, const float* ones, const float* w, int64_t n) {
  ops.copy(gain, ones, n);
  ops.bias_add(gain, w, 1, n, n);
}

float embedding_scale(const ModelConfig& c, GemmDtype weights) {
  if (!c.scaled_embedding) return 1.0f;
  const float s = float(std::sqrt(double(c.dim)));
  if (weights == GemmDtype::kBF16) return numerics::bf16_to_f32(numerics::f32_to_bf16_rne(s));
  if (weights == GemmDtype::kF16) return numerics::fp16_to_f32(numerics::f32_to_fp16_rne(s));
  return s;
}

AttentionShape layer_attention_shape(const ModelConfig& c, int64_t layer, int64_t batch, int64_t seq, GemmDtype dtype) {
  AttentionShape s{batch, seq, c.n_heads, c.n_kv_heads, c.head_dim(), dtype};
  s.window = c.window_of(layer);
  s.score_scalar = c.query_pre_attn_scalar;
  return s;
}

void block_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, int64_t layer, const BlockActs& a,
                   ActRef x, ActRef y, const BlockRows& r) {
  const ModelConfig& c = spec.config;
  const BlockOffsets& w = spec.blocks[size_t(layer)];
  const int64_t R = r.rows, C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim(), D = c.head_dim();
  const bool llama = c.family == ModelFamily::kLlama;
  const WeightOrientation o = spec.orientation;
  // n1 = norm(x); qkv = n1 Wqkv^T + b; (Qwen3, Gemma 3: q, k = norm(q), norm(k) per head); rope(q, k);
  // att = softmax(q k^T * scale) v, scale = 1 / sqrt(D or query_pre_attn_scalar), within the
  // layer's window
  block_norm_forward(spec, ops, hooks, a.n1, a.n1_mean, a.n1_rstd, x, w.norm1_w, w.norm1_b, R, NormSlot::kInput);
  hooks.linear(c.qk_norm ? a.qkv_raw : a.qkv, a.n1, w.qkv_w, w.qkv_b, R, C, Sq, o, ActRef());
  if (c.qk_norm) {
    ops.head_rmsnorm_forward(qk_norm_shape(c, R), a.qkv, a.qk_rstd, a.qkv_raw,
                             norm_weight(c, hooks, NormSlot::kQ, w.q_norm_w, D),
                             norm_weight(c, hooks, NormSlot::kK, w.k_norm_w, D), c.norm_eps);
  }
  if (llama) {
    ops.rope_apply(a.qkv, R, r.period, c.n_heads + c.n_kv_heads, D, Sq, r.cos_of(c, layer), r.sin_of(c, layer), false);
  }
  hooks.attention(layer, a, R);
  if (c.sandwich_norms) {
    // attn_out = att Wo^T; mid = x + norm(attn_out)
    hooks.linear(a.attn_out, a.att, w.attn_out_w, w.attn_out_b, R, c.attn_dim(), C, o, ActRef());
    ops.rmsnorm_forward(a.mid, a.attn_out_rstd, a.attn_out,
                        norm_weight(c, hooks, NormSlot::kAttnPost, w.attn_post_norm_w, C), R, C, c.norm_eps);
    ops.scale_add(a.mid, a.mid, 1.0f, x, R * C);
  } else {
    // mid = x + att Wo^T + bo
    hooks.linear(a.mid, a.att, w.attn_out_w, w.attn_out_b, R, c.attn_dim(), C, o, x);
  }
  // n2 = norm(mid); act = silu(n2 Wg^T) * (n2 Wu^T)  |  gelu(n2 Wg^T) * (n2 Wu^T)  |  gelu(n2 Wfc + bfc)
  block_norm_forward(spec, ops, hooks, a.n2, a.n2_mean, a.n2_rstd, a.mid, w.norm2_w, w.norm2_b, R, NormSlot::kMlpPre);
  const int64_t F = llama ? 2 * H : H;
  hooks.linear(a.fc, a.n2, w.mlp_in_w, w.mlp_in_b, R, C, F, o, ActRef());
  if (llama && c.gelu_gate) {
    ops.geglu_forward(a.act, a.fc, R, H);
  } else if (llama) {
    ops.swiglu_forward(a.act, a.fc, R, H);
  } else {
    ops.gelu_forward(a.act, a.fc, R * H);
  }
  if (c.sandwich_norms) {
    // mlp_out = act Wout^T; y = mid + norm(mlp_out) (y written after the last read of x)
    hooks.linear(a.mlp_out, a.act, w.mlp_out_w, w.mlp_out_b, R, H, C, o, ActRef());
    ops.rmsnorm_forward(y, a.mlp_out_rstd, a.mlp_out, norm_weight(c, hooks, NormSlot::kMlpPost, w.mlp_post_norm_w, C),
                        R, C, c.norm_eps);
    ops.scale_add(y, y, 1.0f, a.mid, R * C);
  } else {
    // y = mid + act Wout^T + bout
    hooks.linear(y, a.act, w.mlp_out_w, w.mlp_out_b, R, H, C, o, a.mid);
  }
}

HeadNormShape qk_norm_shape(const ModelConfig& c, int64_t rows) {
  return HeadNormShape{rows, c.n_heads, c.n_kv_heads, c.head_dim(), c.qkv_dim()};
}

}  // namespace farthing::models

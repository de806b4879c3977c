// block_forward.cpp — see block_forward.h. Shapes in comments use R = rows, C = dim,
// H = hidden, F = H (GPT-2) or 2H (Llama gate|up), Sq = (Hq + 2 Hkv) * head_dim.
#include "models/common/block_forward.h"

namespace farthing::models {

void block_norm_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, ActRef out, float* mean,
                        float* rstd, ActRef x, int64_t w, int64_t b, int64_t rows) {
  const ModelConfig& c = spec.config;
  if (c.family == ModelFamily::kGpt2) {
    ops.layernorm_forward(out, mean, rstd, x, hooks.vector(w), hooks.vector(b), rows, c.dim, c.norm_eps);
  } else {
    ops.rmsnorm_forward(out, rstd, x, hooks.vector(w), rows, c.dim, c.norm_eps);
  }
}

void block_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, int64_t layer, const BlockActs& a,
                   ActRef x, ActRef y, const BlockRows& r) {
  const ModelConfig& c = spec.config;
  const BlockOffsets& w = spec.blocks[size_t(layer)];
  const int64_t R = r.rows, C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim();
  const bool llama = c.family == ModelFamily::kLlama;
  const WeightOrientation o = spec.orientation;
  // n1 = norm(x); qkv = n1 Wqkv^T + b; (Qwen3: q, k = norm(q), norm(k) per head); rope(q, k);
  // att = softmax(q k^T / sqrt(D)) v
  block_norm_forward(spec, ops, hooks, a.n1, a.n1_mean, a.n1_rstd, x, w.norm1_w, w.norm1_b, R);
  hooks.linear(c.qk_norm ? a.qkv_raw : a.qkv, a.n1, w.qkv_w, w.qkv_b, R, C, Sq, o, ActRef());
  if (c.qk_norm) {
    ops.head_rmsnorm_forward(qk_norm_shape(c, R), a.qkv, a.qk_rstd, a.qkv_raw, hooks.vector(w.q_norm_w),
                             hooks.vector(w.k_norm_w), c.norm_eps);
  }
  if (llama) ops.rope_apply(a.qkv, R, r.period, c.n_heads + c.n_kv_heads, c.head_dim(), Sq, r.rope_cos, r.rope_sin, false);
  hooks.attention(layer, a, R);
  // mid = x + att Wo^T + bo
  hooks.linear(a.mid, a.att, w.attn_out_w, w.attn_out_b, R, c.attn_dim(), C, o, x);
  // n2 = norm(mid); act = silu(n2 Wg^T) * (n2 Wu^T)  |  gelu(n2 Wfc + bfc)
  block_norm_forward(spec, ops, hooks, a.n2, a.n2_mean, a.n2_rstd, a.mid, w.norm2_w, w.norm2_b, R);
  const int64_t F = llama ? 2 * H : H;
  hooks.linear(a.fc, a.n2, w.mlp_in_w, w.mlp_in_b, R, C, F, o, ActRef());
  if (llama) {
    ops.swiglu_forward(a.act, a.fc, R, H);
  } else {
    ops.gelu_forward(a.act, a.fc, R * H);
  }
  // y = mid + act Wout^T + bout
  hooks.linear(y, a.act, w.mlp_out_w, w.mlp_out_b, R, H, C, o, a.mid);
}

HeadNormShape qk_norm_shape(const ModelConfig& c, int64_t rows) {
  return HeadNormShape{rows, c.n_heads, c.n_kv_heads, c.head_dim(), c.qkv_dim()};
}

}  // namespace farthing::models

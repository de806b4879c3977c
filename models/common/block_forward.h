// block_forward.h — one transformer block's forward pass, written once. The training model
// (transformer.cpp) runs it over a micro-batch, and again in backward when it recomputes a
// checkpointed block; the KV-cache decoder (kv_cache_decoder.cpp) runs it over a chunk of prompt
// rows or one new token. The two differ only in how a block reads its weights (fp32 parameters,
// a unit's bf16 weights, FP8 projections) and in what attention sees (the micro-batch's own
// positions, or every cached one); each supplies those as BlockHooks.
//
// Both families: Llama (RMSNorm, RoPE, GQA, SwiGLU, optional qkv bias, optional q/k norms), with
// Gemma 3's variant of it (RMSNorm gains 1 + w, sandwich norms, GeGLU, scaled scores, sliding-window
// layers with their own RoPE tables), and GPT-2 (LayerNorm, GELU-tanh, biases, Conv1D weights). Relies on: framework/backend/nn_ops.h.
// Tested by: tests/models/test_kv_cache_decoder.cpp (decoder logits vs the training forward,
// within 1e-5: the GEMMs see other row counts), tests/models/test_model_goldens.cpp, tests/models/test_gradcheck.cpp.
#pragma once

#include <cstdint>

#include "framework/backend/nn_ops.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

// One block's activations, (rows, width) each: what backward reads in training, or the decoder's
// scratch for one chunk of rows. n1 and n2 (and their statistics) may share storage when nothing
// reads n1 after the MLP, as in the decoder. lse is attention's log-sum-exp per (sequence, head,
// position), kept for backward; the decoder has none. n1, n2 and act are read only by GEMMs, att
// only by GEMMs and attention's backward, qkv only by RoPE and attention, fc (the MLP's
// in-projection) only by SwiGLU or GELU and their backwards, and mid (the residual stream
// between attention and the MLP) only by the second norm, its backward and the MLP's residual
// add, so under bf16 compute they may be stored as bf16 (framework/backend/act_ref.h).
struct BlockActs {
  ActRef n1;
  float *n1_mean, *n1_rstd;
  // With q/k norms (Qwen3) the projection's output is qkv_raw, and qkv its heads normalised (then
  // rotated); qk_rstd (rows, Hq + Hkv) the norms' statistics. Unused (null) otherwise.
  ActRef qkv_raw;
  float* qk_rstd = nullptr;
  ActRef qkv, att;
  float* lse;
  ActRef mid;
  ActRef n2;
  float *n2_mean, *n2_rstd;
  ActRef fc, act;
  // Sandwich norms (Gemma 3): attention's and the MLP's outputs (rows, dim) before their post-norms,
  // and those norms' statistics. Unused (null) otherwise.
  ActRef attn_out, mlp_out;
  float* attn_out_rstd = nullptr;
  float* mlp_out_rstd = nullptr;
};

// The rows a block runs: row r sits at the position whose RoPE table row is period.of(r)
// (training: r % seq, counted from the row's document start when documents are packed, and the
// tables start at position 0; the decoder: period = rows and the tables start at the chunk's
// first position). The tables are unused by GPT-2.
struct BlockRows {
  int64_t rows = 0;
  RowPositions period = 0;
  const float* rope_cos = nullptr;  // (period, head_dim / 2) from the first row's position
  const float* rope_sin = nullptr;
  // The sliding-window layers' tables (Gemma 3's own RoPE base there); null without such layers.
  const float* local_cos = nullptr;
  const float* local_sin = nullptr;
  const float* cos_of(const ModelConfig& c, int64_t layer) const { return c.is_sliding(layer) ? local_cos : rope_cos; }
  const float* sin_of(const ModelConfig& c, int64_t layer) const { return c.is_sliding(layer) ? local_sin : rope_sin; }
};

// The norms whose gain a block, and the final norm, read: under RMSNorm gains 1 + w (Gemma 3)
// each has its own gain scratch, so the gains of one block stay valid together.
enum class NormSlot : int { kInput, kQ, kK, kAttnPost, kMlpPre, kMlpPost, kFinal };
inline constexpr int kNormSlots = 7;

// What the caller of block_forward supplies.
class BlockHooks {
 public:
  // The fp32 values of a 1-D tensor (norm weight, bias) at a global flat offset.
  virtual const float* vector(int64_t offset) = 0;
  // y(rows, n) = residual + x(rows, k) W^T (+ bias; bias < 0: none), W at global offset w
  // stored per orient. residual: none (ActRef()), y itself, or another array of y's type (the
  // residual stream the branch adds to; under bf16 activations a bf16 y is rounded once).
  virtual void linear(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t rows, int64_t k, int64_t n,
                      WeightOrientation orient, ActRef residual) = 0;
  // a.att (rows, dim) from a.qkv (rows, qkv_dim; rotary embedding applied): training attends
  // causally within each sequence of the micro-batch and keeps a.lse; the decoder caches the
  // rows' keys and values and attends over every cached position.
  virtual void attention(int64_t layer, const BlockActs& a, int64_t rows) = 0;
  // The gain 1 + w of the norm whose weight w (n values) is at global offset `offset`, written
  // into the slot's scratch by norm_gain_plus_one (below). Asked only where config.norm_plus_one.
  virtual const float* norm_gain(NormSlot slot, int64_t offset, int64_t n) = 0;

 protected:
  ~BlockHooks() = default;
};

// out = norm(x) over rows rows: RMSNorm (Llama; mean unused) or LayerNorm (GPT-2), with the
// weight (and bias) at global offsets w (b); slot: which norm it is (for a gain 1 + w).
void block_norm_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, ActRef out, float* mean,
                        float* rstd, ActRef x, int64_t w, int64_t b, int64_t rows, NormSlot slot);

// What a norm multiplies by: the weight at `offset` (n values) itself, or under config.norm_plus_one
// (Gemma 3) the gain 1 + w.
const float* norm_weight(const ModelConfig& c, BlockHooks& hooks, NormSlot slot, int64_t offset, int64_t n);

// gain (n floats) = 1 + w: w added in fp32 to a row of ones (bias_add), the one rounding of
// transformers' `1.0 + self.weight.float()`. Every backend computes the same bits. The norm ops
// take the gain as their weight; since d(1 + w)/dw = 1, their weight gradient is w's.
void norm_gain_plus_one(NnOps& ops, float* gain, const float* ones, const float* w, int64_t n);

// Gemma 3's embedding multiplier sqrt(dim) as transformers applies it to a model held in `weights`
// (fp32, or the compute's 16-bit type): rounded to that type, as `embed_scale.to(self.weight.dtype)`
// does (bf16: sqrt(1152) = 33.94 becomes 34). 1 where the embedding is not scaled.
float embedding_scale(const ModelConfig& c, GemmDtype weights);

// The attention of layer `layer` over batch sequences of seq rows: its window (sliding layers) and
// score scale (query_pre_attn_scalar) on top of the heads.
AttentionShape layer_attention_shape(const ModelConfig& c, int64_t layer, int64_t batch, int64_t seq, GemmDtype dtype);

// y = block `layer`(x), keeping its activations in a. y may be x (the decoder updates its
// residual stream in place): x is read only before y is written. x, y and a.mid (the residual
// stream) share one storage type.
void block_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, int64_t layer, const BlockActs& a,
                   ActRef x, ActRef y, const BlockRows& rows);

// The q/k norms' shape over `rows` rows of the packed projection.
HeadNormShape qk_norm_shape(const ModelConfig& c, int64_t rows);

}  // namespace farthing::models

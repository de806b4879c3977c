// block_forward.h — one transformer block's forward pass, written once. The training model
// (transformer.cpp) runs it over a micro-batch, and again in backward when it recomputes a
// checkpointed block; the KV-cache decoder (kv_cache_decoder.cpp) runs it over a chunk of prompt
// rows or one new token. The two differ only in how a block reads its weights (fp32 parameters,
// a unit's bf16 weights, FP8 projections) and in what attention sees (the micro-batch's own
// positions, or every cached one); each supplies those as BlockHooks.
//
// Both families: Llama (RMSNorm, RoPE, GQA, SwiGLU, optional qkv bias, optional q/k norms) and GPT-2 (LayerNorm,
// GELU-tanh, biases, Conv1D weights). Relies on: framework/backend/nn_ops.h.
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
};

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

 protected:
  ~BlockHooks() = default;
};

// out = norm(x) over rows rows: RMSNorm (Llama; mean unused) or LayerNorm (GPT-2), with the
// weight (and bias) at global offsets w (b).
void block_norm_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, ActRef out, float* mean,
                        float* rstd, ActRef x, int64_t w, int64_t b, int64_t rows);

// y = block `layer`(x), keeping its activations in a. y may be x (the decoder updates its
// residual stream in place): x is read only before y is written. x, y and a.mid (the residual
// stream) share one storage type.
void block_forward(const TransformerSpec& spec, NnOps& ops, BlockHooks& hooks, int64_t layer, const BlockActs& a,
                   ActRef x, ActRef y, const BlockRows& rows);

// The q/k norms' shape over `rows` rows of the packed projection.
HeadNormShape qk_norm_shape(const ModelConfig& c, int64_t rows);

}  // namespace farthing::models

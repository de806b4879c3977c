// kv_cache_decoder.h — incremental decoding for generation: Transformer's forward maths
// (models/common/transformer.h), but keys and values of past positions are kept in a cache, so
// each new token costs one row through the model instead of the whole prefix. Each block runs the
// training forward itself (block_forward.h); the decoder supplies fp32 weights and attention over
// the cache. Both families: Llama and GPT-2.
//
// The decoder reads weights from a flat fp32 parameter buffer in the spec's layout, which it
// does not own (a Transformer's params(), or a buffer filled by copy_weights_from_file); the
// buffer must outlive the decoder and not change during a sequence.
// KV cache: keys and values each (layers, max_seq, kv_heads, head_dim) fp32, one
// MemoryCategory::kActivations Buffer; rotary embedding is applied to keys before caching.
// Every op runs through the backend's NnOps. Relies on: framework/backend/nn_ops.h,
// framework/core/memory.h, models/common/block_forward.h.
// Tested by: tests/models/test_kv_cache_decoder.cpp (logits vs Transformer::forward_logits),
// tests/models/test_stories260k_greedy.cpp, tests/models/test_smollm2_logits.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/backend/nn_ops.h"
#include "framework/core/memory.h"
#include "models/common/block_forward.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

// Private BlockHooks: block_forward reads the decoder's weights and attends over its cache.
class KvCacheDecoder : private BlockHooks {
 public:
  // max_seq: positions the cache holds (0: the model's max_seq_len); must be <= max_seq_len.
  // ops: where the maths runs (not owned); nullptr: the CPU backend's.
  KvCacheDecoder(const TransformerSpec& spec, const float* params, int64_t max_seq = 0, NnOps* ops = nullptr);

  // Starts a new sequence: runs `tokens` (at least one) from position 0 and returns the
  // logits (vocab) of the last one. The span stays valid until the next prefill/step.
  std::span<const float> prefill(std::span<const int32_t> tokens);
  // Appends one token at position() and returns the logits (vocab) of that position.
  std::span<const float> step(int32_t token);

  // Tokens in the cache (the position the next step() writes).
  int64_t position() const { return position_; }
  int64_t max_seq() const { return max_seq_; }
  const ModelConfig& config() const { return spec_.config; }
  const TransformerSpec& spec() const { return spec_; }

 private:
  // Runs rows tokens at positions position_.. position_ + rows - 1 (rows <= chunk_rows_).
  void forward_rows(const int32_t* tokens, int64_t rows);
  // BlockHooks over the fp32 parameter buffer.
  const float* vector(int64_t offset) override { return params_ + offset; }
  // y(rows, N) (+)= x(rows, K) W^T + bias, W stored per `orient`.
  void linear(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t rows, int64_t k, int64_t n,
              WeightOrientation orient, ActRef residual) override;
  // Caches the rows' keys and values, then attends causally from each row (at position_ + r)
  // over every cached position.
  void attention(int64_t layer, const BlockActs& a, int64_t rows) override;
  const float* norm_gain(NormSlot slot, int64_t offset, int64_t n) override;
  float* key_cache(int64_t layer, int64_t pos) const;
  float* value_cache(int64_t layer, int64_t pos) const;

  TransformerSpec spec_;
  const float* params_;
  NnOps& ops_;
  int64_t max_seq_ = 0, chunk_rows_ = 0, position_ = 0;
  Buffer cache_;    // keys then values, each (layers, max_seq, kv_heads, head_dim)
  Buffer scratch_;  // activations of one chunk of rows, and the last row's logits
  float *x_ = nullptr, *logits_ = nullptr;
  // The blocks' activations over a chunk: n1 and n2 (and their statistics) share one slot.
  BlockActs acts_{};
  std::vector<float> rope_cos_, rope_sin_;  // (max_seq, head_dim / 2), Llama only
  std::vector<float> local_cos_, local_sin_;  // the sliding layers' tables (Gemma 3)
  // Under RMSNorm gains 1 + w (Gemma 3): a row of ones, then kNormSlots gains, gain_width_ each.
  Buffer gains_;
  int64_t gain_width_ = 0;
};

}  // namespace farthing::models

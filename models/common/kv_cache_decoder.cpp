// kv_cache_decoder.cpp — see kv_cache_decoder.h. Shapes in comments use R = rows of the
// current chunk, C = dim, H = hidden, F = H (GPT-2) or 2H (Llama gate|up),
// Sq = (Hq + 2 Hkv) * D, V = vocab.
#include "models/common/kv_cache_decoder.h"
#include "framework/backend/buffer.h"
#include "models/common/rope.h"

#include <algorithm>

#include "framework/backend/backend.h"
#include "framework/core/error.h"

namespace farthing::models {


namespace {

// Prompt tokens run through the model this many at a time: scratch stays small for long
// prompts, and every chunk attends to the cache, so chunking does not change the maths.
constexpr int64_t kPrefillChunkRows = 64;

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }


}  // namespace

KvCacheDecoder::KvCacheDecoder(const TransformerSpec& spec, const float* params, int64_t max_seq, NnOps* ops)
    : spec_(spec), params_(params), ops_(ops != nullptr ? *ops : backend_for(Device::cpu()).nn()) {
  const ModelConfig& c = spec_.config;
  c.validate();
  FARTHING_CHECK(params != nullptr, "model '", c.name, "': KvCacheDecoder needs a parameter buffer");
  max_seq_ = max_seq == 0 ? c.max_seq_len : max_seq;
  FARTHING_CHECK(max_seq_ > 0 && max_seq_ <= c.max_seq_len, "model '", c.name, "': KV cache max_seq(",
                 max_seq_, ") must be in [1, max_seq_len(", c.max_seq_len, ")]");
  const int64_t C = c.dim, H = c.hidden_dim, Sq = c.qkv_dim(), V = c.vocab_size;
  const int64_t F = c.family == ModelFamily::kLlama ? 2 * H : H;
  const int64_t kv_elems = c.n_layers * max_seq_ * c.n_kv_heads * c.head_dim();
  cache_ = Buffer(ops_.device(), size_t(2 * kv_elems) * 4, MemoryCategory::kActivations);

  chunk_rows_ = std::min(kPrefillChunkRows, max_seq_);
  const int64_t R = chunk_rows_;
  // x, n, mean, rstd, qkv, att, mid, fc, act (R rows each), then the last row's logits, then the
  // projection before the q/k norms and their statistics (empty without them)
  const int64_t qk = c.qk_norm ? 1 : 0;
  // (Gemma 3's sandwich norms: attention's and the MLP's outputs before their post-norms, and
  // those norms' statistics, one slot each)
  const int64_t post = c.sandwich_norms ? 1 : 0;
  const int64_t sizes[] = {R * C, R * C, R, R, R * Sq, R * c.attn_dim(), R * C, R * F, R * H, V,
                           qk * R * Sq, qk * R * (c.n_heads + c.n_kv_heads), post * R * C, post * R};
  int64_t total = 0;
  for (int64_t s : sizes) total += round16(s);
  scratch_ = Buffer(ops_.device(), size_t(total) * 4, MemoryCategory::kActivations);
  float* cursor = static_cast<float*>(scratch_.data());
  float* n = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  float* att = nullptr;
  float* qkv = nullptr;
  float* fc = nullptr;
  float* act = nullptr;
  float* mid = nullptr;
  float* qkv_raw = nullptr;
  float* qk_rstd = nullptr;
  float* sub_out = nullptr;
  float* sub_rstd = nullptr;
  float** slots[] = {&x_, &n, &mean, &rstd, &qkv, &att, &mid, &fc, &act, &logits_, &qkv_raw, &qk_rstd, &sub_out, &sub_rstd};
  for (size_t i = 0; i < std::size(slots); ++i) {
    *slots[i] = cursor;
    cursor += round16(sizes[i]);
  }
  acts_.n1 = acts_.n2 = n;  // fp32: the decoder's GEMMs are fp32
  acts_.qkv = qkv;
  if (c.qk_norm) {
    acts_.qkv_raw = qkv_raw;
    acts_.qk_rstd = qk_rstd;
  }
  acts_.att = att;
  acts_.mid = mid;
  acts_.fc = fc;
  acts_.act = act;
  acts_.n1_mean = acts_.n2_mean = mean;
  acts_.n1_rstd = acts_.n2_rstd = rstd;
  if (c.sandwich_norms) {  // attention's output is consumed before the MLP's is made
    acts_.attn_out = acts_.mlp_out = sub_out;
    acts_.attn_out_rstd = acts_.mlp_out_rstd = sub_rstd;
  }
  if (c.family == ModelFamily::kLlama) rope_tables(c, max_seq_, rope_cos_, rope_sin_);
  if (c.family == ModelFamily::kLlama && !c.sliding_layers.empty()) {
    rope_tables(c, max_seq_, local_cos_, local_sin_, /*sliding=*/true);
  }
  if (c.norm_plus_one) {
    gain_width_ = std::max(C, c.head_dim());
    gains_ = Buffer(ops_.device(), size_t((1 + kNormSlots) * gain_width_) * 4, MemoryCategory::kActivations);
    const std::vector<float> ones(size_t(gain_width_), 1.0f);
    ops_.copy(static_cast<float*>(gains_.data()), ones.data(), gain_width_);
  }
}

const float* KvCacheDecoder::norm_gain(NormSlot slot, int64_t offset, int64_t n) {
  float* ones = static_cast<float*>(gains_.data());
  float* gain = ones + (1 + int64_t(slot)) * gain_width_;
  norm_gain_plus_one(ops_, gain, ones, params_ + offset, n);
  return gain;
}

float* KvCacheDecoder::key_cache(int64_t layer, int64_t pos) const {
  const ModelConfig& c = spec_.config;
  const int64_t row = c.n_kv_heads * c.head_dim();
  return static_cast<float*>(cache_.data()) + (layer * max_seq_ + pos) * row;
}

float* KvCacheDecoder::value_cache(int64_t layer, int64_t pos) const {
  const ModelConfig& c = spec_.config;
  return key_cache(layer, pos) + c.n_layers * max_seq_ * c.n_kv_heads * c.head_dim();
}

std::span<const float> KvCacheDecoder::prefill(std::span<const int32_t> tokens) {
  FARTHING_CHECK(!tokens.empty(), "model '", config().name, "': prefill needs at least one token");
  position_ = 0;
  for (size_t done = 0; done < tokens.size();) {
    const int64_t rows = std::min<int64_t>(chunk_rows_, int64_t(tokens.size() - done));
    forward_rows(tokens.data() + done, rows);
    done += size_t(rows);
  }
  return {logits_, size_t(config().vocab_size)};
}

std::span<const float> KvCacheDecoder::step(int32_t token) {
  forward_rows(&token, 1);
  return {logits_, size_t(config().vocab_size)};
}

void KvCacheDecoder::forward_rows(const int32_t* tokens, int64_t rows) {
  const ModelConfig& c = spec_.config;
  const int64_t C = c.dim, V = c.vocab_size;
  FARTHING_CHECK(position_ + rows <= max_seq_, "model '", c.name, "': KV cache is full: position(",
                 position_, ") + tokens(", rows, ") > max_seq(", max_seq_,
                 "); make the decoder with a larger max_seq (the model allows ", c.max_seq_len, ")");
  for (int64_t r = 0; r < rows; ++r) {
    FARTHING_CHECK(tokens[r] >= 0 && tokens[r] < V, "token ", tokens[r], " at position ",
                   position_ + r, " is outside the vocabulary [0, ", V, ")");
  }
  // x (R, C) = wte[tokens] (+ wpe[positions]); the kernel's position is r % seq, so the
  // position table starts at this chunk's first position.
  const float* wpe = spec_.pos_emb >= 0 ? params_ + spec_.pos_emb + position_ * C : nullptr;
  ops_.embedding_forward(x_, tokens, params_ + spec_.tok_emb, wpe, rows, rows, C);
  if (c.scaled_embedding) ops_.scale_add(x_, x_, embedding_scale(c, GemmDtype::kF32), ActRef(), rows * C);
  const int64_t half = c.head_dim() / 2;
  BlockRows block_rows{rows, rows, nullptr, nullptr};
  if (c.family == ModelFamily::kLlama) {
    block_rows.rope_cos = rope_cos_.data() + position_ * half;
    block_rows.rope_sin = rope_sin_.data() + position_ * half;
  }
  if (!local_cos_.empty()) {
    block_rows.local_cos = local_cos_.data() + position_ * half;
    block_rows.local_sin = local_sin_.data() + position_ * half;
  }
  for (int64_t l = 0; l < c.n_layers; ++l) block_forward(spec_, ops_, *this, l, acts_, x_, x_, block_rows);
  // Only the last row's logits are wanted: final norm and head on that row alone.
  float* last = x_ + (rows - 1) * C;
  block_norm_forward(spec_, ops_, *this, acts_.n1, acts_.n1_mean, acts_.n1_rstd, last, spec_.final_norm_w,
                     spec_.final_norm_b, 1, NormSlot::kFinal);
  linear(logits_, acts_.n1, spec_.head_w, -1, 1, C, V, WeightOrientation::kOutIn, ActRef());
  position_ += rows;
}

void KvCacheDecoder::attention(int64_t layer, const BlockActs& a, int64_t rows) {
  const ModelConfig& c = spec_.config;
  const int64_t D = c.head_dim(), Sq = c.qkv_dim();
  // Cache this chunk's keys and values: rows of [k: Hkv*D | v: Hkv*D] after the queries.
  const int64_t kv_row = c.n_kv_heads * D;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a.qkv.f32() + r * Sq + c.n_heads * D;
    ops_.copy(key_cache(layer, position_ + r), src, kv_row);
    ops_.copy(value_cache(layer, position_ + r), src + kv_row, kv_row);
  }
  const AttentionShape shape = layer_attention_shape(c, layer, 1, max_seq_, GemmDtype::kF32);
  ops_.attention_decode(shape, a.att.f32(), a.qkv.f32(), rows, position_, key_cache(layer, 0), value_cache(layer, 0));
}

void KvCacheDecoder::linear(ActRef y, ActRef x, int64_t w, int64_t bias, int64_t rows,
                            int64_t kdim, int64_t n, WeightOrientation orient, ActRef residual) {
  GemmShape s{rows, n, kdim};
  s.trans_b = orient == WeightOrientation::kOutIn ? Trans::kT : Trans::kN;  // W (N,K) or (K,N)
  const bool accumulate = residual.data != nullptr;
  if (accumulate && residual.data != y.data) ops_.copy(y.f32(), residual.f32(), rows * n);
  if (bias >= 0) {
    ops_.matmul_bias(GemmDtype::kF32, s, x.f32(), params_ + w, params_ + bias, y.f32(), accumulate);
  } else {
    ops_.matmul(GemmDtype::kF32, s, x.f32(), params_ + w, y.f32(), accumulate);
  }
}

}  // namespace farthing::models

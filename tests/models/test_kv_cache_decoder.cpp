// test_kv_cache_decoder.cpp — the KV-cache decoder computes the training forward's logits:
// for micro configs of both families (Llama with GQA + qkv bias + tied embeddings; Llama with
// llama3 RoPE scaling in all three frequency regimes; GPT-2 with learned positions), a
// prompt prefilled in two chunks and then extended one token at a time gives, at every
// position, the logits of Transformer::forward_logits over the whole sequence. Also: a full
// cache is an error naming max_seq, and the decoder's cache is charged to kActivations.
// The real stories260K weights are checked in test_stories260k_greedy.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/support/test_support.h"

namespace farthing::models {
namespace {

// Prompt of 70 tokens: two prefill chunks (64 + 6), then 10 single steps.
constexpr int64_t kPromptTokens = 70, kSeq = 80;

ModelConfig micro(const std::string& which) {
  ModelConfig c;
  if (which == "gpt2") {
    c = gpt2_124m();
    c.hidden_dim = 128;
    c.n_kv_heads = 4;
  } else if (which == "llama_rope_scaled") {
    c = llama3_2_1b();  // llama3 scaling, factor 32
    c.hidden_dim = 48;
    c.n_kv_heads = 4;
    c.tied_embeddings = false;
    // head_dim 8, theta 5e5: wavelengths 6.3 .. 2.5e4 straddle [high_wl 2, low_wl 8] = the
    // unscaled, smoothed and divided regimes all occur.
    c.rope_scaling.original_max_position = 8;
  } else {  // "llama_gqa_bias_tied"
    c = smollm2_135m();
    c.hidden_dim = 48;
    c.n_kv_heads = 2;
    c.qkv_bias = true;
    c.tied_embeddings = true;
  }
  c.name = which + "-micro";
  c.vocab_size = 50;
  c.dim = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.max_seq_len = 96;
  return c;
}

// Max |a - b| over max |b|: the relative error of a logits row.
double relative_diff(std::span<const float> a, const float* b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

class KvCacheDecoderVsForward : public ::testing::TestWithParam<std::string> {};

TEST_P(KvCacheDecoderVsForward, EveryPositionMatchesForwardLogits) {
  const ModelConfig c = micro(GetParam());
  Transformer model(make_spec(c), 1, kSeq);
  model.init_weights(11, 0.1f);
  if (c.qkv_bias) {
    // Biases start at 0: give them values, or the test would not see them.
    test::SplitMix64 rng(3);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const int64_t b = model.spec().blocks[size_t(l)].qkv_b;
      for (int64_t i = 0; i < c.qkv_dim(); ++i) model.params()[b + i] = 0.2f * (rng.uniform() - 0.5f);
    }
  }
  test::SplitMix64 rng(7);
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < kSeq; ++i) tokens.push_back(int32_t(rng.next() % uint64_t(c.vocab_size)));
  const int64_t V = c.vocab_size;
  std::vector<float> want(size_t(kSeq * V));
  model.forward_logits(tokens.data(), want.data());

  KvCacheDecoder decoder(model.spec(), model.params(), kSeq);
  double worst = 0;
  std::span<const float> got = decoder.prefill(std::span(tokens).first(kPromptTokens));
  EXPECT_EQ(decoder.position(), kPromptTokens);
  worst = std::max(worst, relative_diff(got, want.data() + (kPromptTokens - 1) * V));
  for (int64_t pos = kPromptTokens; pos < kSeq; ++pos) {
    got = decoder.step(tokens[size_t(pos)]);
    worst = std::max(worst, relative_diff(got, want.data() + pos * V));
  }
  EXPECT_EQ(decoder.position(), kSeq);
  // fp32 both ways; only the summation order of GEMMs and attention dots differs.
  EXPECT_LT(worst, 1e-5) << c.name;
  std::printf("%s: max relative logit diff vs forward_logits %.3g\n", c.name.c_str(), worst);

  // A new prefill starts over: the same prompt gives the same logits.
  const std::vector<float> again(got.begin(), got.end());
  decoder.prefill(std::span(tokens).first(kPromptTokens));
  for (int64_t pos = kPromptTokens; pos < kSeq; ++pos) got = decoder.step(tokens[size_t(pos)]);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), got.begin()));
}

INSTANTIATE_TEST_SUITE_P(Families, KvCacheDecoderVsForward,
                         ::testing::Values("llama_gqa_bias_tied", "llama_rope_scaled", "gpt2"),
                         [](const auto& info) { return info.param; });

TEST(KvCacheDecoder, FullCacheIsAnErrorNamingMaxSeq) {
  const ModelConfig c = micro("llama_gqa_bias_tied");
  Transformer model(make_spec(c), 1, 8);
  model.init_weights(1);
  KvCacheDecoder decoder(model.spec(), model.params(), 8);
  const std::vector<int32_t> prompt(8, 1);
  decoder.prefill(prompt);
  try {
    decoder.step(2);
    FAIL() << "step past max_seq did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seq(8)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(KvCacheDecoder(model.spec(), model.params(), c.max_seq_len + 1), Error);
  const std::vector<int32_t> too_long(9, 1);
  EXPECT_THROW(decoder.prefill(too_long), Error);
  EXPECT_THROW(decoder.prefill(std::vector<int32_t>{int32_t(c.vocab_size)}), Error);
}

TEST(KvCacheDecoder, CacheIsChargedToActivations) {
  const ModelConfig c = micro("gpt2");
  Transformer model(make_spec(c), 1, 8);
  const auto before = memory_tracker(Device::cpu()).snapshot();
  const auto act = size_t(MemoryCategory::kActivations);
  {
    KvCacheDecoder decoder(model.spec(), model.params(), 64);
    const auto during = memory_tracker(Device::cpu()).snapshot();
    // keys + values: (layers, max_seq, kv_heads, head_dim) fp32 each
    const int64_t cache_bytes = 2 * c.n_layers * 64 * c.n_kv_heads * c.head_dim() * 4;
    EXPECT_GE(during.current_bytes[act] - before.current_bytes[act], cache_bytes);
  }
  EXPECT_EQ(memory_tracker(Device::cpu()).snapshot().current_bytes[act], before.current_bytes[act]);
}

}  // namespace
}  // namespace farthing::models

// test_sampling.cpp — token choice and the generation loop: greedy generation equals the argmax
// of Transformer::forward_logits recomputed over the whole prefix; top_k = 1 and a tiny top_p
// are greedy; draws depend only on (seed, position); stop tokens end generation and are not
// returned; and over many positions the draws of temperature / top-k / top-p sampling from a
// fixed logit vector follow the distribution they should (chi-square-style bound, fixed seed,
// so the test is deterministic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "models/common/presets.h"
#include "models/common/sampling.h"
#include "models/common/transformer.h"
#include "models/llama/llama.h"

namespace farthing::models {
namespace {

ModelConfig micro_llama() {
  ModelConfig c = smollm2_135m();
  c.name = "llama-micro";
  c.vocab_size = 40;
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.max_seq_len = 64;
  return c;
}

struct MicroModel {
  Transformer model{make_spec(micro_llama()), 1, 32};
  MicroModel() { model.init_weights(5, 0.2f); }
};

const std::vector<int32_t> kPrompt = {3, 17, 8};

TEST(Generate, GreedyIsArgmaxOfForwardLogits) {
  MicroModel m;
  GenerationOptions o;
  o.max_new_tokens = 20;
  const std::vector<int32_t> got = generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
  ASSERT_EQ(got.size(), 20u);
  // Reference: recompute the whole prefix each step (positions past it cannot matter: causal).
  const int64_t T = m.model.seq(), V = m.model.config().vocab_size;
  std::vector<int32_t> tokens(size_t(T), 0);
  std::copy(kPrompt.begin(), kPrompt.end(), tokens.begin());
  std::vector<float> logits(size_t(T * V));
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t pos = int64_t(kPrompt.size() + i) - 1;  // predicts token pos + 1
    m.model.forward_logits(tokens.data(), logits.data());
    const float* row = logits.data() + pos * V;
    const int32_t want = int32_t(std::max_element(row, row + V) - row);
    ASSERT_EQ(got[i], want) << "new token " << i;
    tokens[size_t(pos + 1)] = want;
  }
  // A non-trivial sequence: the model does not just repeat one token.
  EXPECT_GT(std::set<int32_t>(got.begin(), got.end()).size(), 2u);
}

TEST(Generate, TopK1AndTinyTopPAreGreedy) {
  MicroModel m;
  GenerationOptions greedy;
  greedy.max_new_tokens = 20;
  const auto want = generate_from_params(m.model.spec(), m.model.params(), kPrompt, greedy);
  GenerationOptions top_k1 = greedy;
  top_k1.temperature = 1.0f;
  top_k1.top_k = 1;
  top_k1.seed = 99;
  EXPECT_EQ(generate_from_params(m.model.spec(), m.model.params(), kPrompt, top_k1), want);
  GenerationOptions tiny_p = greedy;
  tiny_p.temperature = 1.0f;
  tiny_p.top_p = 1e-6f;
  tiny_p.seed = 99;
  EXPECT_EQ(generate_from_params(m.model.spec(), m.model.params(), kPrompt, tiny_p), want);
  // And plain temperature sampling with the same seed is not greedy (else the above is vacuous).
  GenerationOptions sampled = greedy;
  sampled.temperature = 1.0f;
  sampled.seed = 99;
  EXPECT_NE(generate_from_params(m.model.spec(), m.model.params(), kPrompt, sampled), want);
}

TEST(Generate, SameSeedSameOutputDifferentSeedDiffers) {
  MicroModel m;
  GenerationOptions o;
  o.max_new_tokens = 24;
  o.temperature = 1.0f;
  o.seed = 1234;
  const auto a = generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
  const auto b = generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
  EXPECT_EQ(a, b);
  o.seed = 1235;
  const auto c = generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
  EXPECT_NE(a, c);
  // Draws are keyed by position, not by how many came before: a reused decoder gives the same.
  KvCacheDecoder decoder(m.model.spec(), m.model.params(), 40);
  o.seed = 1234;
  EXPECT_EQ(generate(decoder, kPrompt, o), a);
  EXPECT_EQ(generate(decoder, kPrompt, o), a);
}

TEST(Generate, StopTokenEndsGenerationAndIsNotReturned) {
  MicroModel m;
  GenerationOptions o;
  o.max_new_tokens = 20;
  const auto full = generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
  const int32_t stop = full[5];
  const auto first = std::find(full.begin(), full.end(), stop);
  o.stop_tokens = {39, stop};
  std::vector<int32_t> streamed;
  KvCacheDecoder decoder(m.model.spec(), m.model.params(), 40);
  const auto got = generate(decoder, kPrompt, o, [&](int32_t t) { streamed.push_back(t); });
  EXPECT_EQ(got, std::vector<int32_t>(full.begin(), first));
  EXPECT_EQ(streamed, got);
}

TEST(Generate, BadOptionsAndOverlongRequestsThrow) {
  MicroModel m;
  GenerationOptions o;
  o.max_new_tokens = 62;  // 3 + 62 - 1 = 64 positions: fits max_seq_len 64 exactly
  EXPECT_EQ(generate_from_params(m.model.spec(), m.model.params(), kPrompt, o).size(), 62u);
  o.max_new_tokens = 63;
  try {
    generate_from_params(m.model.spec(), m.model.params(), kPrompt, o);
    FAIL() << "no error for 65 positions in a 64-position model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seq_len(64)"), std::string::npos) << e.what();
  }
  KvCacheDecoder small(m.model.spec(), m.model.params(), 10);
  o.max_new_tokens = 9;  // 11 positions
  EXPECT_THROW(generate(small, kPrompt, o), Error);
  o = {};
  o.temperature = -1.0f;
  EXPECT_THROW(validate(o), Error);
  o = {};
  o.top_p = 0.0f;
  EXPECT_THROW(validate(o), Error);
  o = {};
  o.top_k = -2;
  EXPECT_THROW(validate(o), Error);
  EXPECT_THROW(generate(small, {}, GenerationOptions{}), Error);
}

// Empirical frequencies of sample_token over positions 0..n-1 against expected probabilities:
// every |freq - p| within 5 standard errors (plus a small floor), and tokens with p = 0 never drawn.
void expect_distribution(const std::vector<float>& logits, const GenerationOptions& o,
                         const std::vector<double>& expected) {
  constexpr int64_t kDraws = 200000;
  std::vector<int64_t> counts(logits.size(), 0);
  for (int64_t pos = 0; pos < kDraws; ++pos) ++counts[size_t(sample_token(logits, o, pos))];
  for (size_t i = 0; i < logits.size(); ++i) {
    const double freq = double(counts[i]) / double(kDraws), p = expected[i];
    if (p == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i;
      continue;
    }
    const double se = std::sqrt(p * (1 - p) / double(kDraws));
    EXPECT_NEAR(freq, p, 5 * se + 1e-4) << "token " << i << " (T=" << o.temperature << ", top_k=" << o.top_k
                                        << ", top_p=" << o.top_p << ")";
  }
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp(double(l) / temperature));
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  return p;
}

const std::vector<float> kLogits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 2.0f};

TEST(SampleToken, TemperatureDrawsFollowSoftmax) {
  GenerationOptions o;
  o.seed = 42;
  for (float t : {1.0f, 0.5f, 2.0f}) {
    o.temperature = t;
    expect_distribution(kLogits, o, softmax(kLogits, t));
  }
}

TEST(SampleToken, TopKAndTopPRestrictAndRenormalise) {
  GenerationOptions o;
  o.seed = 7;
  o.temperature = 1.0f;
  // top_k = 3 keeps ids 4 (3.0), then 1 and 5 (2.0 each; ties by lower id).
  o.top_k = 3;
  const auto p = softmax(kLogits, 1.0);
  const double k3 = p[4] + p[1] + p[5];
  expect_distribution(kLogits, o, {0, p[1] / k3, 0, 0, p[4] / k3, p[5] / k3});
  // top_k = 2 breaks the tie at 2.0 toward id 1.
  o.top_k = 2;
  expect_distribution(kLogits, o, {0, p[1] / (p[4] + p[1]), 0, 0, p[4] / (p[4] + p[1]), 0});
  // top_p: p = (.069, .187, .042, .009, .507, .187); 0.6 needs ids 4 and 1 (mass .694),
  // 0.7 adds id 5 (.881), 0.5 is id 4 alone.
  o.top_k = 0;
  o.top_p = 0.5f;
  expect_distribution(kLogits, o, {0, 0, 0, 0, 1, 0});
  o.top_p = 0.6f;
  expect_distribution(kLogits, o, {0, p[1] / (p[4] + p[1]), 0, 0, p[4] / (p[4] + p[1]), 0});
  o.top_p = 0.7f;
  expect_distribution(kLogits, o, {0, p[1] / k3, 0, 0, p[4] / k3, p[5] / k3});
}

TEST(SampleToken, DrawsAreAPureFunctionOfSeedAndPosition) {
  GenerationOptions o;
  o.temperature = 1.0f;
  o.seed = 3;
  std::vector<int32_t> forward, backward;
  for (int64_t pos = 0; pos < 100; ++pos) forward.push_back(sample_token(kLogits, o, pos));
  for (int64_t pos = 99; pos >= 0; --pos) backward.push_back(sample_token(kLogits, o, pos));
  std::reverse(backward.begin(), backward.end());
  EXPECT_EQ(forward, backward);
  double mean = 0;
  for (int64_t pos = 0; pos < 10000; ++pos) {
    const double u = sampling_uniform(3, pos);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    mean += u / 10000;
  }
  EXPECT_NEAR(mean, 0.5, 0.015);
  EXPECT_NE(sampling_uniform(3, 0), sampling_uniform(4, 0));
  EXPECT_NE(sampling_uniform(3, 0), sampling_uniform(3, 1));
  // Greedy ties: the lowest id, as std::max_element.
  o.temperature = 0.0f;
  EXPECT_EQ(sample_token(std::vector<float>{1.0f, 5.0f, 5.0f}, o, 0), 1);
}

}  // namespace
}  // namespace farthing::models

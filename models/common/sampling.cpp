// sampling.cpp — see sampling.h.
#include "models/common/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/core/error.h"
#include "kernels/numerics/philox.h"

namespace farthing::models {

namespace {

// Third counter word of every sampling draw: keeps these draws apart from other Philox users
// keyed by the same seed (weight init, stochastic rounding), whose counters are element indices.
constexpr uint32_t kSamplingStream = 0x53414D50u;  // "SAMP"

int32_t argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

void validate(const GenerationOptions& options) {
  FARTHING_CHECK(options.max_new_tokens >= 0, "generation: max_new_tokens(", options.max_new_tokens,
                 ") must be >= 0");
  FARTHING_CHECK(std::isfinite(options.temperature) && options.temperature >= 0.0f, "generation: temperature(",
                 options.temperature, ") must be >= 0 (0: greedy)");
  FARTHING_CHECK(options.top_k >= 0, "generation: top_k(", options.top_k, ") must be >= 0 (0: off)");
  FARTHING_CHECK(options.top_p > 0.0f && options.top_p <= 1.0f, "generation: top_p(", options.top_p,
                 ") must be in (0, 1] (1: off)");
}

double sampling_uniform(uint64_t seed, int64_t position) {
  const uint64_t pos = uint64_t(position);
  const numerics::Philox4x32 bits = numerics::philox4x32_10(
      numerics::Philox4x32{{uint32_t(pos), uint32_t(pos >> 32), kSamplingStream, 0u}}, uint32_t(seed),
      uint32_t(seed >> 32));
  const uint64_t mantissa = (uint64_t(bits.v[0]) << 21) | (uint64_t(bits.v[1]) >> 11);  // 53 bits
  return double(mantissa) * 0x1.0p-53;
}

int32_t sample_token(std::span<const float> logits, const GenerationOptions& options, int64_t position) {
  FARTHING_CHECK(!logits.empty(), "sample_token: empty logits");
  if (options.temperature == 0.0f || options.top_k == 1) return argmax(logits);
  const int64_t vocab = int64_t(logits.size());
  // Candidates in descending probability (ties: lower id first); only as many sorted as kept.
  std::vector<int32_t> ids(size_t(vocab), 0);
  std::iota(ids.begin(), ids.end(), 0);
  const auto more_likely = [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  };
  const int64_t kept_k = options.top_k > 0 ? std::min(options.top_k, vocab) : vocab;
  if (kept_k == vocab) std::sort(ids.begin(), ids.end(), more_likely);
  else std::partial_sort(ids.begin(), ids.begin() + kept_k, ids.end(), more_likely);
  ids.resize(size_t(kept_k));
  // NOTE: softmax(logits / T) in double, max-subtracted, over the top-k candidates (the whole
  // vocabulary when top_k is off), so the top-p mass is of the top-k distribution, as in
  // Hugging Face's order of warpers (temperature, top-k, top-p).
  const double inv_t = 1.0 / double(options.temperature);
  const double top = double(logits[size_t(ids[0])]);
  std::vector<double> prob(ids.size());
  double total = 0.0;
  for (size_t i = 0; i < ids.size(); ++i) {
    prob[i] = std::exp((double(logits[size_t(ids[i])]) - top) * inv_t);
    total += prob[i];
  }
  for (double& p : prob) p /= total;
  if (options.top_p < 1.0f) {
    // Smallest prefix whose mass reaches top_p (always at least the most likely token).
    double mass = 0.0;
    size_t keep = 0;
    while (keep < prob.size() && (keep == 0 || mass < double(options.top_p))) mass += prob[keep++];
    prob.resize(keep);
  }
  const double kept_mass = std::accumulate(prob.begin(), prob.end(), 0.0);
  const double target = sampling_uniform(options.seed, position) * kept_mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < prob.size(); ++i) {
    cumulative += prob[i];
    if (target < cumulative) return ids[i];
  }
  return ids[prob.size() - 1];  // target rounded onto the total mass
}

std::vector<int32_t> generate(KvCacheDecoder& decoder, std::span<const int32_t> prompt,
                              const GenerationOptions& options, const TokenCallback& on_token) {
  validate(options);
  FARTHING_CHECK(!prompt.empty(), "generation needs a prompt of at least one token (e.g. BOS)");
  std::vector<int32_t> out;
  if (options.max_new_tokens == 0) return out;
  // The last new token is never fed back, so the cache holds prompt + max_new_tokens - 1.
  const int64_t needed = int64_t(prompt.size()) + options.max_new_tokens - 1;
  FARTHING_CHECK(needed <= decoder.max_seq(), "generation: prompt(", prompt.size(), ") + max_new_tokens(",
                 options.max_new_tokens, ") - 1 = ", needed, " positions > the decoder's max_seq(",
                 decoder.max_seq(), ")");
  std::span<const float> logits = decoder.prefill(prompt);
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    const int64_t position = int64_t(prompt.size()) + i;
    const int32_t token = sample_token(logits, options, position);
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) != options.stop_tokens.end()) break;
    out.push_back(token);
    if (on_token) on_token(token);
    if (i + 1 < options.max_new_tokens) logits = decoder.step(token);
  }
  return out;
}

std::vector<int32_t> generate_from_params(const TransformerSpec& spec, const float* params,
                                          std::span<const int32_t> prompt,
                                          const GenerationOptions& options) {
  validate(options);
  const int64_t needed = std::max<int64_t>(int64_t(prompt.size()) + options.max_new_tokens - 1, 1);
  FARTHING_CHECK(needed <= spec.config.max_seq_len, "generation: prompt(", prompt.size(),
                 ") + max_new_tokens(", options.max_new_tokens, ") - 1 = ", needed,
                 " positions > the model's max_seq_len(", spec.config.max_seq_len, ")");
  KvCacheDecoder decoder(spec, params, needed);
  return generate(decoder, prompt, options);
}

}  // namespace farthing::models

// sampling.h — choosing the next token from logits (greedy, temperature, top-k, top-p) and
// the generation loop over a KvCacheDecoder.
//
// NOTE: each draw is a pure function of (seed, position): one Philox4x32-10 block with key =
// seed and counter = (position, kSamplingStream), so a generation is reproducible on any
// machine and does not depend on how many draws came before (a resumed or re-run generation
// samples position p identically). Probabilities are computed in double from the fp32 logits.
// Relies on: kernels/numerics/philox.h, kv_cache_decoder.h.
// Tested by: tests/models/test_sampling.cpp, tests/cli/ (farthing generate).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "models/common/kv_cache_decoder.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

struct GenerationOptions {
  int64_t max_new_tokens = 128;
  float temperature = 0.0f;  // 0: greedy (argmax, lowest id on ties)
  int64_t top_k = 0;         // keep the k most likely tokens; 0: off
  float top_p = 1.0f;        // keep the smallest most-likely set with mass >= top_p; 1: off
  uint64_t seed = 0;
  std::vector<int32_t> stop_tokens;  // generation ends at the first one (not returned)
};

// Throws farthing::Error naming the option when a value is out of range.
void validate(const GenerationOptions& options);

// Uniform double in [0, 1) drawn for `position` under `seed` (53 random bits).
double sampling_uniform(uint64_t seed, int64_t position);

// The token chosen from `logits` (vocab) for sequence position `position`: argmax when
// temperature is 0 or top_k is 1; otherwise softmax(logits / temperature), restricted to the
// top_k most likely, then to the top_p nucleus, renormalised and sampled by inverse CDF over
// the candidates in descending probability (ties: lower id first).
int32_t sample_token(std::span<const float> logits, const GenerationOptions& options, int64_t position);

// Called with each generated token as it is chosen (stop tokens are not reported).
using TokenCallback = std::function<void(int32_t token)>;

// Prefills `prompt` (at least one token, e.g. BOS) and samples up to max_new_tokens tokens.
// Returns only the new tokens: the prompt is not included, and neither is the stop token that
// ended generation (if one did). The token sampled at sequence position p (p >= prompt size)
// uses draw (seed, p). Needs prompt.size() + max_new_tokens - 1 <= decoder.max_seq().
std::vector<int32_t> generate(KvCacheDecoder& decoder, std::span<const int32_t> prompt,
                              const GenerationOptions& options, const TokenCallback& on_token = {});

// generate() with a decoder made for this call, its cache sized for exactly this generation
// (throws when prompt + max_new_tokens - 1 exceeds the model's max_seq_len): the trainer's
// demo sample from its current parameters.
std::vector<int32_t> generate_from_params(const TransformerSpec& spec, const float* params,
                                          std::span<const int32_t> prompt,
                                          const GenerationOptions& options);

}  // namespace farthing::models

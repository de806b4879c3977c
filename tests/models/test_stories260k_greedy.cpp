// test_stories260k_greedy.cpp — the real stories260K weights (../shared, llama2.c format),
// decoded greedily from BOS with farthing's KV-cache decoder, reproduce the model's documented
// output, greedy.txt, token for token. This ties together the llama2.c reader (and its RoPE
// permutation), the flat HF-named layout, the decoder, the sampler's greedy path and the
// tok512 tokenizer. The logits the decoder produced at every position are then compared with
// one Transformer::forward_logits pass over the whole generated sequence (the training forward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ckpt/read_model.h"
#include "framework/data/tokenizer_loaders.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/sampling.h"
#include "models/common/transformer.h"
#include "models/common/weights_from_file.h"
#include "tests/support/test_support.h"

using namespace farthing;

TEST(Stories260K, GreedyFromBosReproducesGreedyTxt) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto dir = shared / "models" / "stories260K";
  const ckpt::ModelFile file = ckpt::read_model_file(dir / "stories260K.bin");
  const data::Tokenizer tokenizer = data::load_tokenizer(dir / "tok512.bin");

  // llama2.c's `run -t 0 -n 256`: 256 positions, each predicting the next token.
  constexpr int64_t kSteps = 256;
  models::Transformer model(models::make_spec(models::model_config_from_file(file)), 1, kSteps);
  models::copy_weights_from_file(file, model.layout(), model.params());
  EXPECT_EQ(model.layout().param_count(), 260032);
  const int64_t V = model.config().vocab_size;

  // Greedy through the sampler, recording each position's logits from the decoder.
  models::KvCacheDecoder decoder(model.spec(), model.params(), kSteps);
  models::GenerationOptions options;
  options.max_new_tokens = kSteps;
  options.stop_tokens = {tokenizer.bos_id()};  // llama2.c's run stops at BOS
  const std::vector<int32_t> prompt = {tokenizer.bos_id()};
  const std::vector<int32_t> generated = models::generate(decoder, prompt, options);
  ASSERT_FALSE(generated.empty());

  std::ifstream in(dir / "greedy.txt");
  std::stringstream expected;
  expected << in.rdbuf();
  std::string want = expected.str();
  std::string got = tokenizer.decode(generated);
  // greedy.txt ends with the newline its writer printed; the sample itself does not.
  while (!want.empty() && want.back() == '\n') want.pop_back();
  while (!got.empty() && got.back() == '\n') got.pop_back();
  EXPECT_EQ(got, want);

  // Every position's decoder logits against the training forward over the same tokens.
  std::vector<int32_t> tokens(size_t(kSteps), 0);
  tokens[0] = tokenizer.bos_id();
  const int64_t fed = std::min<int64_t>(int64_t(generated.size()), kSteps - 1);
  std::copy(generated.begin(), generated.begin() + fed, tokens.begin() + 1);
  std::vector<float> want_logits(size_t(kSteps * V));
  model.forward_logits(tokens.data(), want_logits.data());
  double worst = 0;
  for (int64_t pos = 0; pos <= fed; ++pos) {
    const std::span<const float> row =
        pos == 0 ? decoder.prefill(std::span(tokens).first(1)) : decoder.step(tokens[size_t(pos)]);
    double diff = 0, scale = 0;
    for (int64_t v = 0; v < V; ++v) {
      diff = std::max(diff, std::fabs(double(row[size_t(v)]) - want_logits[size_t(pos * V + v)]));
      scale = std::max(scale, std::fabs(double(want_logits[size_t(pos * V + v)])));
    }
    worst = std::max(worst, diff / scale);
  }
  EXPECT_LT(worst, 1e-5);
  std::printf("stories260K: %zu tokens generated; max relative logit diff decoder vs forward_logits "
              "over %lld positions: %.3g\n",
              generated.size(), (long long)fed + 1, worst);
}

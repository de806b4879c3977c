// test_stories260k_greedy.cpp — the real stories260K weights (../shared, llama2.c format) run
// through farthing's own Llama forward and decoded greedily from BOS reproduce the model's
// documented output, greedy.txt, token for token. This ties together the llama2.c reader (and
// its RoPE permutation), the flat HF-named layout, the fp32 forward and the tok512 tokenizer.
// Generation here recomputes the whole prefix each step (no KV cache: that comes with
// `farthing generate`); causal attention makes positions past the prefix irrelevant.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ckpt/read_model.h"
#include "framework/data/tokenizer_loaders.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "tests/support/test_support.h"

using namespace farthing;

TEST(Stories260K, GreedyFromBosReproducesGreedyTxt) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto dir = shared / "models" / "stories260K";
  const ckpt::ModelFile file = ckpt::read_model_file(dir / "stories260K.bin");
  const data::Tokenizer tokenizer = data::load_tokenizer(dir / "tok512.bin");

  constexpr int64_t kSteps = 256;
  models::Transformer model(models::make_spec(models::preset_config("stories260k")), 1, kSteps);
  // Every tensor of the layout comes from the file under its HF name, with its shape checked.
  int64_t loaded = 0;
  for (const models::ParamEntry& entry : model.layout().entries()) {
    const ckpt::ModelTensor& t = file.expect(entry.name, entry.shape);
    const float* values = static_cast<const float*>(t.data.data());
    std::copy(values, values + entry.numel(), model.param(entry.name));
    loaded += entry.numel();
  }
  EXPECT_EQ(loaded, 260032);

  std::vector<int32_t> tokens(kSteps, 0);
  tokens[0] = tokenizer.bos_id();
  std::vector<float> logits(size_t(kSteps) * size_t(model.config().vocab_size));
  std::vector<int32_t> generated;
  // llama2.c's `run -t 0 -n 256`: 256 forward passes, each position predicting the next token.
  for (int64_t pos = 0; pos < kSteps; ++pos) {
    model.forward_logits(tokens.data(), logits.data());
    const float* row = logits.data() + size_t(pos) * size_t(model.config().vocab_size);
    const int32_t next = int32_t(std::max_element(row, row + model.config().vocab_size) - row);
    if (next == tokenizer.bos_id()) break;  // llama2.c's run stops at BOS
    if (pos + 1 < kSteps) tokens[size_t(pos + 1)] = next;
    generated.push_back(next);
  }
  std::ifstream in(dir / "greedy.txt");
  std::stringstream expected;
  expected << in.rdbuf();
  std::string want = expected.str();
  std::string got = tokenizer.decode(generated);
  // greedy.txt ends with the newline its writer printed; the sample itself does not.
  while (!want.empty() && want.back() == '\n') want.pop_back();
  while (!got.empty() && got.back() == '\n') got.pop_back();
  EXPECT_EQ(got, want);
}

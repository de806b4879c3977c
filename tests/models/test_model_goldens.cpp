// test_model_goldens.cpp — fp32 forward and backward against PyTorch/transformers: logits,
// loss and every parameter gradient, tensor by tensor, for tiny Llama (GQA, untied, llama3
// RoPE scaling), Qwen2 (q/k/v biases, tied), GPT-2, Qwen3 (q/k norms, GQA, head_dim other
// than hidden / heads) and Gemma 3 (norm gains 1 + w, sandwich norms, GeGLU, scaled embedding and
// scores, sliding and global layers with a window of 5 over 12 tokens, each with its RoPE base)
// configs, and Qwen3 with use_sliding_window (layers from max_window_layers on attend through a
// window of 4), the last three with the reference in fp64; and, where the golden has one, the
// KV-cache decoder's greedy continuation against transformers' generate (Qwen3 with the window:
// against the argmax of transformers' forward step by step, which its generate departs from there,
// tools/goldens/gen_model_goldens.py).
// Goldens: tests/data/models/*.fgld from tools/goldens/gen_model_goldens.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <span>
#include <cstring>
#include <vector>

#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "tests/models/model_golden.h"
#include "tests/models/model_test_options.h"

namespace farthing::models {
namespace {

// docs/numerics.md §8 fp32 tolerance, unchanged: |a - ref| <= 1e-6 + 5e-6 |ref| for logits, the loss and
// every gradient element. Observed worst cases are printed per family.
constexpr double kAtol = 1e-6, kRtol = 5e-6;

class ModelGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelGolden, LogitsLossAndEveryGradientMatchPyTorch) {
  const auto g = test::read_golden(test::test_data_dir() / "models" / (std::string(GetParam()) + ".fgld"));
  const ModelConfig config = config_from_hf_json(g.at("config_json").text(), GetParam());
  const auto& ids = g.at("input_ids");
  const int64_t B = ids.dims[0], T = ids.dims[1];
  Transformer model(make_spec(config), B, T, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 5));
  int64_t golden_params = 0;
  for (const auto& [name, t] : g) golden_params += name.rfind("param/", 0) == 0;
  ASSERT_EQ(golden_params, int64_t(model.layout().entries().size()))
      << "PyTorch and farthing disagree on the number of parameter tensors";
  for (const ParamEntry& e : model.layout().entries()) {
    const auto it = g.find("param/" + e.name);
    ASSERT_TRUE(it != g.end()) << "golden has no parameter " << e.name;
    ASSERT_EQ(it->second.numel(), e.numel()) << e.name;
    for (int i = 0; i < e.shape.rank; ++i) ASSERT_EQ(it->second.dims[size_t(i)], e.shape[i]) << e.name;
    std::memcpy(model.param(e.name), it->second.f32(), size_t(e.numel()) * 4);
  }
  const int64_t V = config.vocab_size;
  std::vector<float> logits(size_t(B * T * V));
  model.forward_logits(ids.i32(), logits.data());
  const auto lr = test::compare_tensors(logits.data(), g.at("logits").f32(), B * T * V, kAtol, kRtol);
  std::printf("  %-16s logits       max|err| %.3g  nmse %.3g\n", GetParam(), lr.max_abs, lr.nmse);
  EXPECT_LE(lr.worst_ratio, 1.0) << "logits differ most at " << lr.worst_index;

  model.zero_grads();
  const float loss = model.forward_backward(ids.i32(), g.at("targets").i32());
  const float ref_loss = g.at("loss").f32()[0];
  std::printf("  %-16s loss %.7f vs %.7f (|err| %.3g)\n", GetParam(), loss, ref_loss,
              std::fabs(double(loss) - ref_loss));
  EXPECT_NEAR(loss, ref_loss, 1e-6 + 5e-6 * std::fabs(ref_loss));
  // An fp64 reference (the goldens with a greedy continuation) holds the loss to 1e-6 outright.
  if (g.count("generate_ids")) EXPECT_NEAR(loss, ref_loss, 1e-6);
  double worst_abs = 0.0, worst_nmse = 0.0;
  for (const ParamEntry& e : model.layout().entries()) {
    const auto& ref = g.at("grad/" + e.name);
    const auto r = test::compare_tensors(model.grad(e.name), ref.f32(), e.numel(), kAtol, kRtol);
    worst_abs = std::max(worst_abs, r.max_abs);
    worst_nmse = std::max(worst_nmse, r.nmse);
    EXPECT_LE(r.worst_ratio, 1.0) << "gradient of " << e.name << " differs at " << r.worst_index
                                  << " by " << r.max_abs << " (nmse " << r.nmse << ")";
  }
  std::printf("  %-16s gradients    max|err| %.3g  worst nmse %.3g over %zu tensors\n", GetParam(),
              worst_abs, worst_nmse, model.layout().entries().size());

  // Greedy decoding through the KV cache, token for token as transformers' generate.
  if (!g.count("generate_ids")) return;
  const auto& prompt = g.at("generate_prompt");
  const auto& want = g.at("generate_ids");
  KvCacheDecoder decoder(model.spec(), model.params());
  auto argmax = [](std::span<const float> l) { return int32_t(std::max_element(l.begin(), l.end()) - l.begin()); };
  std::span<const float> logits_now = decoder.prefill({prompt.i32(), size_t(prompt.numel())});
  for (int64_t i = 0; i < want.numel(); ++i) {
    const int32_t next = argmax(logits_now);
    ASSERT_EQ(next, want.i32()[i]) << "greedy token " << i << " differs from transformers' (smallest "
                                   << "top-2 logit gap there: " << g.at("generate_margin").f32()[0] << ")";
    logits_now = decoder.step(next);
  }
  std::printf("  %-16s greedy       %lld tokens equal to transformers' generate\n", GetParam(),
              static_cast<long long>(want.numel()));
}

INSTANTIATE_TEST_SUITE_P(Families, ModelGolden,
                         ::testing::Values("llama_gqa_tiny", "qwen2_tiny", "gpt2_tiny", "qwen3_tiny", "gemma3_tiny",
                                           "qwen3_window_tiny"));

}  // namespace
}  // namespace farthing::models

// test_fp8_model.cpp — the FP8 linear layers of a Transformer (models/common/fp8_linears.h) on
// micro Llama and GPT-2 models: each scaling recipe gives a loss and gradients close to bf16
// compute's (a priori bounds from E4M3's precision, below) but not bitwise equal to them (so the
// FP8 path ran), repeats bit for bit, and delayed scaling records amaxes in training steps only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"

namespace farthing::models {
namespace {

ModelConfig micro(ModelFamily family) {
  ModelConfig c = family == ModelFamily::kGpt2 ? gpt2_124m() : smollm2_135m();
  c.name = "fp8-micro";
  c.vocab_size = 64;
  c.dim = 160;  // two 128-wide tiles, the second cut short
  c.hidden_dim = 200;
  c.n_layers = 2;
  c.n_heads = 5;
  c.n_kv_heads = family == ModelFamily::kGpt2 ? 5 : 1;
  c.max_seq_len = 64;
  return c;
}

constexpr int64_t kBatch = 2, kSeq = 40;

std::vector<int32_t> ids(const ModelConfig& c, int salt) {
  std::vector<int32_t> t(size_t(kBatch * kSeq));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 7919 + size_t(salt) * 31 + 3) % size_t(c.vocab_size));
  return t;
}

struct Step {
  float loss = 0.0f;
  std::vector<float> grads;
};

// One forward and backward; with a history, `warm_steps` steps first fill it (as a trainer
// would, one end_step each), and the gradients are those of the last.
Step run(const ModelConfig& c, const Fp8Recipe* fp8, Fp8AmaxHistory* history = nullptr, int warm_steps = 0) {
  ModelOptions o;
  o.compute = ComputeMode::kBF16;
  o.fp8.recipe = fp8;
  o.fp8.history = history;
  Transformer m(make_spec(c), kBatch, kSeq, o);
  m.init_weights(11, 0.05f);
  const std::vector<int32_t> tokens = ids(c, 0), targets = ids(c, 1);
  for (int i = 0; i < warm_steps; ++i) {
    m.forward_backward(tokens.data(), targets.data());
    m.collect_fp8_amaxes();
    history->end_step();
  }
  m.zero_grads();
  Step s;
  s.loss = m.forward_backward(tokens.data(), targets.data());
  s.grads.assign(m.grads(), m.grads() + m.layout().total_elems());
  return s;
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(got[i]) - double(ref[i])) * (double(got[i]) - double(ref[i]));
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / den);
}

// A priori bounds, not fitted: E4M3 keeps 4 significant bits, so rounding moves each operand
// element by at most 2^-4 of itself (RMS ~2^-4/sqrt(3) ~ 3.6%); a GEMM of two such operands
// carries ~5% relative error, and backward chains a few GEMMs per layer. A quarter of the
// gradient's norm is far beyond that, and a broken FP8 path (wrong scale, wrong tile, a
// transposed operand) gives errors of order 1. The loss averages over every token: 2%.
constexpr double kGradRelL2 = 0.25, kLossRel = 0.02;

struct Case {
  ModelFamily family;
  Fp8Scaling scaling;
};

class Fp8Model : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8Model, CloseToBf16ComputeButNotEqual) {
  const ModelConfig c = micro(GetParam().family);
  Fp8Recipe recipe;
  recipe.scaling = GetParam().scaling;
  const Step bf16 = run(c, nullptr);
  Fp8AmaxHistory history(Fp8Linears::history_tensors(make_spec(c), recipe), recipe.amax_history_len);
  const bool delayed = recipe.scaling == Fp8Scaling::kTensorDelayed;
  const Step fp8 = run(c, &recipe, delayed ? &history : nullptr, delayed ? 2 : 0);
  EXPECT_LE(std::fabs(double(fp8.loss) - double(bf16.loss)), kLossRel * double(bf16.loss))
      << fp8.loss << " vs bf16 " << bf16.loss;
  const double err = relative_l2(fp8.grads, bf16.grads);
  EXPECT_LE(err, kGradRelL2) << "gradient relative L2 error against bf16 compute";
  EXPECT_GT(err, 0.0) << "FP8 gradients equal bf16's bit for bit: the FP8 path did not run";
  std::printf("  %s %s: loss %.6f (bf16 %.6f), gradient relative L2 error %.4f\n",
              GetParam().family == ModelFamily::kGpt2 ? "gpt2" : "llama",
              std::string(fp8_scaling_name(recipe.scaling)).c_str(), fp8.loss, bf16.loss, err);
}

TEST_P(Fp8Model, RepeatsBitForBit) {
  const ModelConfig c = micro(GetParam().family);
  Fp8Recipe recipe;
  recipe.scaling = GetParam().scaling;
  const int64_t tensors = Fp8Linears::history_tensors(make_spec(c), recipe);
  Fp8AmaxHistory h1(tensors, 4), h2(tensors, 4);
  const bool delayed = recipe.scaling == Fp8Scaling::kTensorDelayed;
  const Step a = run(c, &recipe, delayed ? &h1 : nullptr, delayed ? 1 : 0);
  const Step b = run(c, &recipe, delayed ? &h2 : nullptr, delayed ? 1 : 0);
  EXPECT_EQ(std::memcmp(&a.loss, &b.loss, 4), 0);
  EXPECT_EQ(std::memcmp(a.grads.data(), b.grads.data(), a.grads.size() * 4), 0);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (ModelFamily f : {ModelFamily::kLlama, ModelFamily::kGpt2}) {
    for (Fp8Scaling s : {Fp8Scaling::kBlock, Fp8Scaling::kTensorCurrent, Fp8Scaling::kTensorDelayed}) {
      v.push_back({f, s});
    }
  }
  return v;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.family == ModelFamily::kGpt2 ? "gpt2_" : "llama_") +
         std::string(fp8_scaling_name(info.param.scaling));
}

INSTANTIATE_TEST_SUITE_P(Recipes, Fp8Model, ::testing::ValuesIn(cases()), case_name);

TEST(Fp8Delayed, TrainingStepsRecordAmaxesAndEvaluationDoesNot) {
  const ModelConfig c = micro(ModelFamily::kLlama);
  Fp8Recipe recipe;
  recipe.scaling = Fp8Scaling::kTensorDelayed;
  const TransformerSpec spec = make_spec(c);
  Fp8AmaxHistory history(Fp8Linears::history_tensors(spec, recipe), 4);
  ASSERT_EQ(history.tensors(), 3 * 4 * c.n_layers) << "three roles of four projections per block";
  ModelOptions o;
  o.compute = ComputeMode::kBF16;
  o.fp8.recipe = &recipe;
  o.fp8.history = &history;
  Transformer m(spec, kBatch, kSeq, o);
  m.init_weights(11, 0.05f);
  const std::vector<int32_t> tokens = ids(c, 0), targets = ids(c, 1);
  m.forward_loss(tokens.data(), targets.data());
  m.collect_fp8_amaxes();
  for (uint32_t bits : history.step_amax_bits()) EXPECT_EQ(bits, 0u) << "evaluation recorded an amax";
  m.forward_backward(tokens.data(), targets.data());
  // The casts fold their amaxes in the ops' memory; the history sees them only when collected.
  for (uint32_t bits : history.step_amax_bits()) EXPECT_EQ(bits, 0u) << "an amax reached the host before collect";
  m.collect_fp8_amaxes();
  for (int64_t t = 0; t < history.tensors(); ++t) {
    EXPECT_GT(history.step_amax_bits()[size_t(t)], 0u) << "tensor " << t << " (role " << t % 3 << ") not recorded";
    EXPECT_LT(history.step_amax_bits()[size_t(t)], 0x7F800000u) << "tensor " << t << ": non-finite amax";
  }
}

TEST(Fp8Delayed, NeedsAHistoryOfTheRightSize) {
  const ModelConfig c = micro(ModelFamily::kLlama);
  Fp8Recipe recipe;
  recipe.scaling = Fp8Scaling::kTensorDelayed;
  ModelOptions o;
  o.compute = ComputeMode::kBF16;
  o.fp8.recipe = &recipe;
  EXPECT_THROW(Transformer(make_spec(c), kBatch, kSeq, o), Error);
  Fp8AmaxHistory wrong(5, 4);
  o.fp8.history = &wrong;
  EXPECT_THROW(Transformer(make_spec(c), kBatch, kSeq, o), Error);
}

TEST(Fp8Layers, MlpOnlyLeavesAttentionProjectionsInBf16) {
  const ModelConfig c = micro(ModelFamily::kLlama);
  Fp8Recipe all, mlp;
  mlp.layers = Fp8Layers::kMlp;
  const TransformerSpec spec = make_spec(c);
  EXPECT_EQ(Fp8Linears::projections(spec, all).size(), size_t(4 * c.n_layers));
  const std::vector<Fp8Projection> p = Fp8Linears::projections(spec, mlp);
  ASSERT_EQ(p.size(), size_t(2 * c.n_layers));
  for (size_t l = 0; l < size_t(c.n_layers); ++l) {
    EXPECT_EQ(p[2 * l].weight, spec.blocks[l].mlp_in_w);
    EXPECT_EQ(p[2 * l + 1].weight, spec.blocks[l].mlp_out_w);
  }
}

}  // namespace
}  // namespace farthing::models

// test_gradcheck.cpp — finite-difference gradient check on micro configs (no PyTorch
// needed): for each parameter tensor, the directional derivative along a random direction
// by central differences of the fp32 loss (accumulated in fp64) against g . v from backward.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/models/model_test_options.h"
#include "tests/support/test_support.h"

namespace farthing::models {
namespace {

ModelConfig micro(ModelFamily family) {
  ModelConfig c = family == ModelFamily::kGpt2 ? gpt2_124m() : llama3_2_1b();
  c.vocab_size = 40;
  c.dim = 16;
  c.hidden_dim = family == ModelFamily::kGpt2 ? 64 : 24;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = family == ModelFamily::kGpt2 ? 4 : 2;
  c.max_seq_len = 16;
  c.qkv_bias = family == ModelFamily::kLlama;
  c.tied_embeddings = family == ModelFamily::kGpt2;
  c.rope_scaling.original_max_position = 8;
  return c;
}

class GradCheck : public ::testing::TestWithParam<ModelFamily> {};

TEST_P(GradCheck, DirectionalDerivativesMatchFiniteDifferences) {
  const ModelConfig c = micro(GetParam());
  const int64_t B = 2, T = 9;
  Transformer m(make_spec(c), B, T, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 4));
  m.init_weights(3, 0.3f);
  test::SplitMix64 rng(5);
  std::vector<int32_t> tokens, targets;
  for (int64_t i = 0; i < B * T; ++i) tokens.push_back(int32_t(rng.next() % uint64_t(c.vocab_size)));
  for (int64_t i = 0; i < B * T; ++i) targets.push_back(i == 4 ? -100 : int32_t(rng.next() % uint64_t(c.vocab_size)));
  m.zero_grads();
  m.forward_backward(tokens.data(), targets.data());
  const std::vector<float> grad(m.grads(), m.grads() + m.layout().total_elems());
  float* p = m.params();
  for (const ParamEntry& e : m.layout().entries()) {
    std::vector<double> v(size_t(e.numel()));
    double gv = 0.0, gnorm2 = 0.0;
    for (int64_t i = 0; i < e.numel(); ++i) {
      v[size_t(i)] = rng.normal();
      gv += double(grad[size_t(e.offset_elems + i)]) * v[size_t(i)];
      gnorm2 += double(grad[size_t(e.offset_elems + i)]) * double(grad[size_t(e.offset_elems + i)]);
    }
    const std::vector<float> saved(p + e.offset_elems, p + e.offset_elems + e.numel());
    auto loss_at = [&](double h) {
      for (int64_t i = 0; i < e.numel(); ++i) {
        p[e.offset_elems + i] = float(double(saved[size_t(i)]) + h * v[size_t(i)]);
      }
      return double(m.forward_loss(tokens.data(), targets.data()));
    };
    // NOTE: h = 1e-3 balances truncation (O(h^2); 1e-2 was visibly too coarse for the std-0.3
    // weights) against fp32 loss rounding: the two losses carry ~4e-7 of fp32 rounding each, so fd
    // itself is uncertain by ~4e-7 / h whatever the gradient. The bound adds that floor to the
    // relative term: without it, tensors with small gradients (a bias, scale ~0.07) failed or
    // passed by the luck of the forward's summation order (an ASan build's differs).
    const double h = 1e-3;
    const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
    std::copy(saved.begin(), saved.end(), p + e.offset_elems);
    const double scale = std::sqrt(gnorm2 * double(e.numel())) + 1e-4;
    const double rounding_floor = 4e-7 / h;
    EXPECT_NEAR(fd, gv, 2e-3 * scale + rounding_floor) << e.name << ": finite difference " << fd << " vs backward " << gv;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GradCheck, ::testing::Values(ModelFamily::kLlama, ModelFamily::kGpt2));

}  // namespace
}  // namespace farthing::models

// test_model_ops_routing.cpp — models run every op through the backend's NnOps
// (framework/backend/nn_ops.h), never through kernels directly: a recording NnOps that counts
// each call and forwards it to the CPU set sees exactly the calls a training step and a
// decoding step must make, and the results are bitwise those of the default (CPU backend) run.
// An NnOps that refuses GEMMs makes the model fail, so no product bypasses the interface.
// The source check (no #include of kernels/cpu under models/) is tests/models/no_direct_kernels.cmake.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/models/recording_ops.h"

namespace farthing::models {
namespace {

using testing::RecordingOps;

ModelConfig micro(ModelFamily family) {
  ModelConfig c = family == ModelFamily::kGpt2 ? gpt2_124m() : smollm2_135m();
  c.name = "routing-micro";
  c.vocab_size = 40;
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = family == ModelFamily::kGpt2 ? 4 : 2;
  c.max_seq_len = 32;
  return c;
}

constexpr int64_t kBatch = 2, kSeq = 12, kChunkRows = 10;  // 24 rows: loss chunks of 10, 10, 4

std::vector<int32_t> tokens_for(const ModelConfig& c, int salt) {
  std::vector<int32_t> t(size_t(kBatch * kSeq));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 7 + size_t(salt) * 3 + 1) % size_t(c.vocab_size));
  return t;
}

struct StepResult {
  float loss;
  std::vector<float> grads;
};

StepResult train_step(const ModelConfig& c, ComputeMode compute, NnOps* ops, const Fp8Recipe* fp8 = nullptr) {
  ModelOptions options;
  options.compute = compute;
  options.fp8.recipe = fp8;
  options.loss_chunk_rows = kChunkRows;
  options.ops = ops;
  Transformer model(make_spec(c), kBatch, kSeq, options);
  model.init_weights(7);
  const std::vector<int32_t> tokens = tokens_for(c, 0), targets = tokens_for(c, 1);
  StepResult r;
  r.loss = model.forward_backward(tokens.data(), targets.data());
  r.grads.assign(model.grads(), model.grads() + model.layout().total_elems());
  return r;
}

class OpsRouting : public ::testing::TestWithParam<ModelFamily> {};

TEST_P(OpsRouting, TrainingStepMakesExactlyTheExpectedCallsAndTheSameBits) {
  const ModelConfig c = micro(GetParam());
  const bool llama = GetParam() == ModelFamily::kLlama;
  const int64_t L = c.n_layers, chunks = 3;
  for (ComputeMode compute : {ComputeMode::kF32, ComputeMode::kBF16}) {
    RecordingOps ops;
    const StepResult routed = train_step(c, compute, &ops);
    const StepResult plain = train_step(c, compute, nullptr);
    EXPECT_EQ(std::memcmp(&routed.loss, &plain.loss, 4), 0) << routed.loss << " vs " << plain.loss;
    ASSERT_EQ(routed.grads.size(), plain.grads.size());
    EXPECT_EQ(std::memcmp(routed.grads.data(), plain.grads.data(), plain.grads.size() * 4), 0);

    // Per block: 4 linears forward (qkv, out, mlp in, mlp out), each 2 GEMMs backward; the
    // head: 1 GEMM forward and 2 backward per loss chunk. Under bf16 every forward GEMM of a
    // block writes bf16 (matmul_bf16_out): qkv and the MLP's in-projection, and the out and down
    // projections, which add onto the bf16 residual stream; so does every dgrad: the MLP's
    // activation's and attention's output's gradients (the down and out projections'), and the
    // norms' outputs' (qkv's, the in-projection's and the head's, per chunk); and the head's
    // forward writes the logits as bf16, per chunk.
    // GPT-2's four linears have biases: their forward GEMMs add them (matmul_bias where the output
    // is fp32; matmul_bf16_out takes the bias too) and their weight gradients' GEMMs carry the
    // bias gradients (matmul_bias_grad).
    const bool bf16 = compute == ComputeMode::kBF16;
    const int64_t bf16_out = bf16 ? 8 * L + 2 * chunks : 0;
    const int64_t biased = llama ? 0 : 4 * L;
    const int64_t bias_forward = bf16 ? 0 : biased;
    EXPECT_EQ(ops.calls["matmul"], 12 * L + 3 * chunks - bf16_out - bias_forward - biased);
    EXPECT_EQ(ops.calls["matmul_bf16_out"], bf16_out);
    EXPECT_EQ(ops.calls["matmul_bias"], bias_forward);
    EXPECT_EQ(ops.calls["matmul_bias_grad"], biased);
    EXPECT_EQ(ops.calls["bias_add"], 0);
    EXPECT_EQ(ops.calls["bias_backward"], 0);
    EXPECT_EQ(ops.calls["attention_forward"], L);
    EXPECT_EQ(ops.calls["attention_backward"], L);
    EXPECT_EQ(ops.calls["cross_entropy_rows"], chunks);
    EXPECT_EQ(ops.calls["embedding_forward"], 1);
    EXPECT_EQ(ops.calls["embedding_backward"], 1);
    // In fp32 each residual branch's GEMM accumulates onto a copy of the stream (2 per block);
    // under bf16 the GEMM reads the stream as its C. Llama also copies its RoPE tables in (2).
    EXPECT_EQ(ops.calls["copy"], (bf16 ? 0 : 2 * L) + (llama ? 2 : 0));
    const char* norm_fwd = llama ? "rmsnorm_forward" : "layernorm_forward";
    const char* norm_bwd = llama ? "rmsnorm_backward" : "layernorm_backward";
    EXPECT_EQ(ops.calls[norm_fwd], 2 * L + 1);
    EXPECT_EQ(ops.calls[norm_bwd], 2 * L + 1);
    EXPECT_EQ(ops.calls[llama ? "swiglu_forward" : "gelu_forward"], L);
    EXPECT_EQ(ops.calls[llama ? "swiglu_backward" : "gelu_backward"], L);
    EXPECT_EQ(ops.calls["rope"], llama ? L : 0);
    EXPECT_EQ(ops.calls["rope_inverse"], llama ? L : 0);
    EXPECT_EQ(ops.calls[llama ? "layernorm_forward" : "rmsnorm_forward"], 0);
    if (compute == ComputeMode::kF32) {
      EXPECT_EQ(ops.calls["narrow"], 0);
    } else {
      // The working weights once; every GEMM operand is stored as bf16 (act_ref.h) and read in
      // place, the logits' gradient too (cross-entropy turns the bf16 logits into it in place).
      EXPECT_EQ(ops.calls["narrow"], 1);
    }
  }
}

TEST_P(OpsRouting, Fp8ProjectionsRunAsFp8GemmsAndTheHeadDoesNot) {
  const ModelConfig c = micro(GetParam());
  const int64_t L = c.n_layers, chunks = 3;
  for (Fp8Layers layers : {Fp8Layers::kAll, Fp8Layers::kMlp}) {
    Fp8Recipe fp8;  // block scaling
    fp8.layers = layers;
    const int64_t fp8_linears = layers == Fp8Layers::kAll ? 4 * L : 2 * L;
    RecordingOps ops;
    const StepResult routed = train_step(c, ComputeMode::kBF16, &ops, &fp8);
    const StepResult plain = train_step(c, ComputeMode::kBF16, nullptr, &fp8);
    EXPECT_EQ(std::memcmp(&routed.loss, &plain.loss, 4), 0);
    EXPECT_EQ(std::memcmp(routed.grads.data(), plain.grads.data(), plain.grads.size() * 4), 0);
    // Each FP8 projection: forward, dgrad and wgrad in FP8; the rest, and the head, in bf16.
    // GPT-2's biases: the FP8 projections' by bias_add and bias_backward; the others' with their
    // GEMMs (matmul_bias forward, the activations being fp32 under FP8, and matmul_bias_grad).
    const bool gpt2 = GetParam() == ModelFamily::kGpt2;
    const int64_t bf16_biased = gpt2 ? 4 * L - fp8_linears : 0;
    EXPECT_EQ(ops.calls["matmul_fp8"], 3 * fp8_linears);
    EXPECT_EQ(ops.calls["matmul"], 3 * (4 * L - fp8_linears) + 3 * chunks - 2 * bf16_biased);
    EXPECT_EQ(ops.calls["matmul_bias"], bf16_biased);
    EXPECT_EQ(ops.calls["matmul_bias_grad"], bf16_biased);
    EXPECT_EQ(ops.calls["bias_add"], gpt2 ? fp8_linears : 0);
    EXPECT_EQ(ops.calls["bias_backward"], gpt2 ? fp8_linears : 0);
    // Weights once (flat model), then per projection: x forward; dy twice (row and column
    // tiles) and x once more (column tiles) in backward.
    EXPECT_EQ(ops.calls["fp8_quantize"], fp8_linears + 4 * fp8_linears);
  }
}

TEST_P(OpsRouting, DecodingGoesThroughTheOpsWithTheSameLogits) {
  const ModelConfig c = micro(GetParam());
  Transformer model(make_spec(c), 1, kSeq);
  model.init_weights(11);
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  RecordingOps ops;
  KvCacheDecoder routed(model.spec(), model.params(), kSeq, &ops);
  KvCacheDecoder plain(model.spec(), model.params(), kSeq);
  std::span<const float> a = routed.prefill(prompt), b = plain.prefill(prompt);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  a = routed.step(9);
  b = plain.step(9);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // Prefill and one step: every layer attends twice; GEMMs: 4 per block and the head, twice
  // (GPT-2's four linears add their biases in the GEMM: matmul_bias).
  const int64_t biased = GetParam() == ModelFamily::kGpt2 ? 2 * 4 * c.n_layers : 0;
  EXPECT_EQ(ops.calls["attention_decode"], 2 * c.n_layers);
  EXPECT_EQ(ops.calls["matmul"], 2 * (4 * c.n_layers + 1) - biased);
  EXPECT_EQ(ops.calls["matmul_bias"], biased);
  EXPECT_EQ(ops.calls["embedding_forward"], 2);
}

TEST_P(OpsRouting, AnOpsSetThatRefusesGemmsStopsTheModel) {
  const ModelConfig c = micro(GetParam());
  RecordingOps ops;
  ops.refuse_matmul = true;
  EXPECT_THROW(train_step(c, ComputeMode::kF32, &ops), std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(Families, OpsRouting, ::testing::Values(ModelFamily::kLlama, ModelFamily::kGpt2),
                         [](const auto& info) { return info.param == ModelFamily::kLlama ? "llama" : "gpt2"; });

// The CUDA backend hands out its own model ops (cuda_nn_ops.h), on its own device.
TEST(OpsRouting, CudaBackendHandsOutCudaModelOps) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device here";
  EXPECT_EQ(backend_for(Device::cuda(0)).nn().device(), Device::cuda(0));
}

}  // namespace
}  // namespace farthing::models

// test_vocab_padding.cpp — the logits rows are padded in memory to logits_row_stride (the
// vocabulary rounded up to 128), and the pad columns never enter the loss or the head's GEMMs.
// A training step of a micro Llama (untied head) and a micro GPT-2 (tied), with a vocabulary of
// 200 (rows 256 apart) and GPT-2's own 50,257 (50,304 apart), in loss chunks of 10 rows over 24
// (a short last chunk), at fp32 compute, bf16 compute with bf16 activations (bf16 logits) and
// bf16 compute with fp32 activations (the logits' gradient narrowed for the head's GEMMs): the
// loss is handed each chunk at the padded stride, and with every pad column set to NaN before
// the loss reads the chunk (RecordingOps::poison_logit_pads) the loss and every gradient are
// bitwise the unpoisoned step's, and no pad column was written.
// Relies on: models/common/transformer.h, tests/models/recording_ops.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/models/recording_ops.h"

namespace farthing::models {
namespace {

using testing::RecordingOps;

TEST(VocabPadding, RowStrideIsTheVocabularyRoundedUpTo128) {
  EXPECT_EQ(logits_row_stride(50257), 50304);    // GPT-2
  EXPECT_EQ(logits_row_stride(49152), 49152);    // SmolLM2: already a multiple
  EXPECT_EQ(logits_row_stride(128256), 128256);  // Llama 3
  EXPECT_EQ(logits_row_stride(151936), 151936);  // Qwen2.5
  EXPECT_EQ(logits_row_stride(512), 512);        // stories260K
  EXPECT_EQ(logits_row_stride(200), 256);
  EXPECT_EQ(logits_row_stride(129), 256);
  EXPECT_EQ(logits_row_stride(1), 128);
}

constexpr int64_t kBatch = 2, kSeq = 12, kChunkRows = 10;

ModelConfig micro(ModelFamily family, int64_t vocab) {
  ModelConfig c = family == ModelFamily::kGpt2 ? gpt2_124m() : smollm2_135m();
  c.name = "padding-micro";
  c.vocab_size = vocab;
  c.tied_embeddings = family == ModelFamily::kGpt2;
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = family == ModelFamily::kGpt2 ? 4 : 2;
  c.max_seq_len = 32;
  return c;
}

std::vector<int32_t> ids(int64_t vocab, int salt) {
  std::vector<int32_t> t(size_t(kBatch * kSeq));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 7919 + size_t(salt) * 131 + 5) % size_t(vocab));
  return t;
}

struct Step {
  float loss = 0.0f;
  std::vector<float> grads;
};

struct Mode {
  const char* name;
  ComputeMode compute;
  bool bf16_activations;
};

Step train_step(const ModelConfig& c, const Mode& mode, RecordingOps& ops) {
  ModelOptions options;
  options.compute = mode.compute;
  options.bf16_activations = mode.bf16_activations;
  options.loss_chunk_rows = kChunkRows;
  options.ops = &ops;
  Transformer model(make_spec(c), kBatch, kSeq, options);
  model.init_weights(11, 0.1f);
  std::vector<int32_t> targets = ids(c.vocab_size, 2);
  targets[3] = -100;  // an ignored row
  Step s;
  s.loss = model.forward_backward(ids(c.vocab_size, 1).data(), targets.data());
  s.grads.assign(model.grads(), model.grads() + model.layout().total_elems());
  return s;
}

struct Case {
  ModelFamily family;
  int64_t vocab;
  Mode mode;
};

class PadColumns : public ::testing::TestWithParam<Case> {};

TEST_P(PadColumns, NeverEnterTheLossOrTheHead) {
  const Case& p = GetParam();
  const ModelConfig c = micro(p.family, p.vocab);
  const int64_t stride = logits_row_stride(p.vocab);
  ASSERT_GT(stride, p.vocab) << "a case without padding tests nothing here";
  RecordingOps plain_ops, poisoned_ops;
  poisoned_ops.poison_logit_pads = true;
  const Step plain = train_step(c, p.mode, plain_ops);
  const Step poisoned = train_step(c, p.mode, poisoned_ops);

  // Three chunks (10, 10, 4 rows), each handed to the loss at the padded stride.
  EXPECT_EQ(poisoned_ops.logits_strides, std::vector<int64_t>(3, stride));
  EXPECT_EQ(poisoned_ops.pad_values_changed, 0) << "the loss wrote pad columns";
  ASSERT_TRUE(std::isfinite(plain.loss));
  EXPECT_EQ(std::memcmp(&poisoned.loss, &plain.loss, 4), 0) << poisoned.loss << " vs " << plain.loss;
  ASSERT_EQ(poisoned.grads.size(), plain.grads.size());
  int64_t differ = 0, nonfinite = 0;
  size_t first = 0;
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    const bool d = std::memcmp(&poisoned.grads[i], &plain.grads[i], 4) != 0;
    if (d && differ == 0) first = i;
    differ += d;
    nonfinite += !std::isfinite(poisoned.grads[i]);
  }
  EXPECT_EQ(differ, 0) << differ << " gradient elements differ, the first at " << first << " ("
                       << poisoned.grads[first] << " vs " << plain.grads[first] << ")";
  EXPECT_EQ(nonfinite, 0) << "a pad column reached the gradients";
}

std::vector<Case> cases() {
  const Mode modes[] = {{"f32", ComputeMode::kF32, false},
                        {"bf16", ComputeMode::kBF16, true},
                        {"bf16_fp32_acts", ComputeMode::kBF16, false}};
  std::vector<Case> v;
  for (const Mode& m : modes) {
    v.push_back({ModelFamily::kLlama, 200, m});
    v.push_back({ModelFamily::kGpt2, 200, m});
    v.push_back({ModelFamily::kGpt2, 50257, m});
  }
  return v;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& p = info.param;
  return std::string(p.family == ModelFamily::kGpt2 ? "gpt2" : "llama") + "_v" + std::to_string(p.vocab) + "_" +
         p.mode.name;
}

INSTANTIATE_TEST_SUITE_P(Steps, PadColumns, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace farthing::models

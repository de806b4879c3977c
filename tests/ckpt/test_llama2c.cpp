// test_llama2c.cpp — stories260K.bin loads with HF names, the right shapes, 260,032
// parameters and the config from its header; q/k rows are moved from Meta's interleaved RoPE
// layout to HF's rotate-half layout (checked row by row against the raw file, and by a worked
// example and a round trip of rope_permute).
// Relies on: ../shared/models/stories260K. Tests: ckpt/llama2c, ckpt/rope_permute.
#include <gtest/gtest.h>

#include <cstring>

#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/read_model.h"
#include "framework/ckpt/rope_permute.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing;
using namespace farthing::ckpt;

TEST(RopePermute, WorkedExampleAndRoundTrip) {
  // 2 heads of head_dim 8, one column: interleaved row (h, i, half) = h*8 + 2i + half. (head_dim
  // 4 would not do: its permutation is its own inverse, so it cannot tell the directions apart.)
  float interleaved[16], half[16], back[16];
  for (int r = 0; r < 16; ++r) interleaved[r] = float(r);
  rope_interleaved_to_half(interleaved, half, 16, 1, 2);
  // Per head: the first of each pair (rows 0 2 4 6), then the second (1 3 5 7).
  const float expected[16] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(half[i], expected[i]) << i;
  rope_half_to_interleaved(half, back, 16, 1, 2);
  EXPECT_EQ(std::memcmp(back, interleaved, sizeof(back)), 0);
  EXPECT_THROW(rope_interleaved_to_half(interleaved, half, 14, 1, 2), Error);  // head_dim 7 is odd
}

TEST(Llama2c, Stories260KShapesAndParameterCount) {
  FARTHING_REQUIRE_SHARED(shared);
  const ModelFile m = read_model_file(shared / "models/stories260K/stories260K.bin");
  EXPECT_EQ(m.format, "llama2c");
  EXPECT_EQ(m.num_parameters(), 260032);
  EXPECT_EQ(m.config["hidden_size"], 64);
  EXPECT_EQ(m.config["intermediate_size"], 172);
  EXPECT_EQ(m.config["num_hidden_layers"], 5);
  EXPECT_EQ(m.config["num_attention_heads"], 8);
  EXPECT_EQ(m.config["num_key_value_heads"], 4);
  EXPECT_EQ(m.config["vocab_size"], 512);
  EXPECT_EQ(m.config["max_position_embeddings"], 512);
  EXPECT_EQ(m.config["tie_word_embeddings"], true);
  EXPECT_FALSE(m.has("lm_head.weight"));
  EXPECT_EQ(m.tensors.size(), 1u + 5u * 9u + 1u);
  m.expect("model.embed_tokens.weight", {512, 64});
  m.expect("model.norm.weight", {64});
  for (int l = 0; l < 5; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.expect(p + "input_layernorm.weight", {64});
    m.expect(p + "post_attention_layernorm.weight", {64});
    m.expect(p + "self_attn.q_proj.weight", {64, 64});
    m.expect(p + "self_attn.k_proj.weight", {32, 64});
    m.expect(p + "self_attn.v_proj.weight", {32, 64});
    m.expect(p + "self_attn.o_proj.weight", {64, 64});
    m.expect(p + "mlp.gate_proj.weight", {172, 64});
    m.expect(p + "mlp.down_proj.weight", {64, 172});
    m.expect(p + "mlp.up_proj.weight", {172, 64});
  }
}

TEST(Llama2c, QkRowsArePermutedToRotateHalf) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto path = shared / "models/stories260K/stories260K.bin";
  const ModelFile m = read_llama2c(path);
  const std::vector<uint8_t> raw = test::read_file_bytes(path);
  const int64_t D = 64, V = 512, L = 5, KVD = 32, head_dim = 8;
  // Offsets in floats after the 7-int header: embedding, rms_att, wq[L], wk[L].
  const int64_t wq0 = V * D + L * D, wk0 = wq0 + L * D * D;
  auto raw_at = [&](int64_t float_index) {
    float v;
    std::memcpy(&v, raw.data() + 28 + 4 * float_index, 4);
    return v;
  };
  const float* q = m.at("model.layers.1.self_attn.q_proj.weight").f32();
  const float* k = m.at("model.layers.1.self_attn.k_proj.weight").f32();
  for (int64_t rows : {D, KVD}) {
    const float* hf = rows == D ? q : k;
    const int64_t base = rows == D ? wq0 + D * D : wk0 + KVD * D;  // layer 1
    for (int64_t h = 0; h < rows / head_dim; ++h) {
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        for (int64_t half = 0; half < 2; ++half) {
          const int64_t hf_row = h * head_dim + half * head_dim / 2 + i, meta_row = h * head_dim + 2 * i + half;
          for (int64_t c = 0; c < D; c += 17) {
            ASSERT_EQ(hf[hf_row * D + c], raw_at(base + meta_row * D + c)) << rows << " " << hf_row << " " << c;
          }
        }
      }
    }
  }
  // v is not permuted.
  const float* v = m.at("model.layers.0.self_attn.v_proj.weight").f32();
  const int64_t wv0 = wk0 + L * KVD * D;
  for (int64_t e = 0; e < KVD * D; e += 13) ASSERT_EQ(v[e], raw_at(wv0 + e));
}

}  // namespace

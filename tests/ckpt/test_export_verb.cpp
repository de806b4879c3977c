// test_export_verb.cpp — `farthing export` driven through run_export (main.cpp wires it later):
// stories260K.bin to a sharded bf16 HF directory whose tensors are the bf16 roundings of the
// source's, a GGUF's own tokenizer exported beside its weights, and usage errors.
// Relies on: ../shared/models/stories260K, tests/support/gguf_builder.h. Tests: verb_export.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "framework/data/tokenizer_loaders.h"
#include "framework/data/utf8.h"
#include "kernels/numerics/bf16.h"
#include "tests/support/gguf_builder.h"
#include "tests/support/test_support.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
using namespace farthing;

TEST(ExportVerb, Stories260KToShardedBf16) {
  FARTHING_REQUIRE_SHARED(shared);
  const fs::path src = shared / "models/stories260K/stories260K.bin";
  const fs::path out = fs::temp_directory_path() / ("farthing_export_" + std::to_string(::getpid()));
  fs::remove_all(out);
  ASSERT_EQ(run_export({"--from", src.string(), "--out", out.string(), "--dtype", "bf16", "--max-shard-bytes", "200000"}), 0);
  EXPECT_TRUE(fs::exists(out / "model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(out / "config.json"));
  EXPECT_FALSE(fs::exists(out / "tokenizer.json"));
  const ckpt::ModelFile a = ckpt::read_llama2c(src), b = ckpt::read_safetensors(out);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    const ckpt::ModelTensor& u = b.expect(name, t.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      ASSERT_EQ(u.f32()[i], numerics::bf16_to_f32(numerics::f32_to_bf16_rne(t.f32()[i]))) << name << " " << i;
    }
  }
  EXPECT_EQ(b.config, a.config);
  fs::remove_all(out);
}

TEST(ExportVerb, GgufCarriesItsTokenizer) {
  test::GgufBuilder g;
  g.add_string("general.architecture", "llama");
  g.add_u32("llama.attention.head_count", 1);
  g.add_string("tokenizer.ggml.model", "gpt2");
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(data::byte_level_char(uint8_t(b)));
  tokens.push_back("\xC4\xA0t");  // "Ġt"
  g.add_strings("tokenizer.ggml.tokens", tokens);
  g.add_strings("tokenizer.ggml.merges", {"\xC4\xA0 t"});
  g.add_string("tokenizer.chat_template", "{{ x }}");
  const std::string norm(4 * 32, '\0');
  g.add_tensor("output_norm.weight", {32}, 0, norm);
  const fs::path src = fs::temp_directory_path() / ("farthing_export_src_" + std::to_string(::getpid()) + ".gguf");
  const fs::path out = fs::temp_directory_path() / ("farthing_export_tok_" + std::to_string(::getpid()));
  g.write(src);
  ASSERT_EQ(run_export({"--from", src.string(), "--out", out.string()}), 0);
  const data::Tokenizer tok = data::load_tokenizer(out / "tokenizer.json");
  EXPECT_EQ(tok.encode(" t"), (std::vector<int32_t>{256}));
  EXPECT_NE(test::read_file_bytes(out / "tokenizer_config.json").size(), 0u);
  const auto config_bytes = test::read_file_bytes(out / "tokenizer_config.json");
  EXPECT_NE(std::string(config_bytes.begin(), config_bytes.end()).find("{{ x }}"), std::string::npos);
  EXPECT_EQ(run_export({"--from", src.string()}), 2);
  EXPECT_EQ(run_export({"--nope"}), 2);
  fs::remove_all(out);
  fs::remove(src);
}

}  // namespace

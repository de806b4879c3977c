// test_export_verb.cpp — `farthing export` driven through the command line (cli::run_command):
// stories260K.bin to a sharded bf16 HF directory whose tensors are the bf16 roundings of the
// source's, a GGUF's own tokenizer exported beside its weights, and usage errors; the default
// dtype is the source's own (f32 for llama2.c, bf16 for a bf16 safetensors directory), with
// torch_dtype in config.json, generation_config.json's bos/eos ids, --max-shard-size units; a
// Hugging Face folder's tokenizer_config.json (chat template, eos) and generation_config.json
// carried over as they are, with its config.json's special ids; --from paths it cannot read
// refused naming the forms it takes, writing nothing.
// Relies on: ../shared/models/stories260K, tests/support/gguf_builder.h. Tests: verb_export.cpp,
// export_source.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "framework/data/tokenizer_loaders.h"
#include "framework/data/utf8.h"
#include "kernels/numerics/bf16.h"
#include "tests/support/gguf_builder.h"
#include "tests/support/test_support.h"
#include "tools/farthing/cli.h"

namespace {

// `farthing export ARGS...` as the command line runs it (only the export verb is linked here).
int run_export_verb(std::vector<std::string> args) {
  args.insert(args.begin(), "export");
  return farthing::cli::run_command(args);
}

namespace fs = std::filesystem;
using namespace farthing;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The dtype names in a safetensors file's header.
std::set<std::string> header_dtypes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  std::set<std::string> dtypes;
  const nlohmann::json header = nlohmann::json::parse(text);
  for (const auto& [name, entry] : header.items()) {
    if (name != "__metadata__") dtypes.insert(entry["dtype"].get<std::string>());
  }
  return dtypes;
}

TEST(ExportVerb, Stories260KToShardedBf16) {
  FARTHING_REQUIRE_SHARED(shared);
  const fs::path src = shared / "models/stories260K/stories260K.bin";
  const fs::path out = fs::temp_directory_path() / ("farthing_export_" + std::to_string(::getpid()));
  fs::remove_all(out);
  ASSERT_EQ(run_export_verb({"--from", src.string(), "--out", out.string(), "--dtype", "bf16", "--max-shard-bytes", "200000"}), 0);
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
  nlohmann::json config = a.config;
  config["torch_dtype"] = "bfloat16";  // the stored dtype
  EXPECT_EQ(b.config, config);
  const nlohmann::json generation = read_json(out / "generation_config.json");
  EXPECT_EQ(generation["bos_token_id"], 1);
  EXPECT_EQ(generation["eos_token_id"], 2);
  const nlohmann::json index = read_json(out / "model.safetensors.index.json");
  EXPECT_EQ(header_dtypes(out / index["weight_map"]["model.norm.weight"].get<std::string>()),
            std::set<std::string>{"BF16"});
  fs::remove_all(out);
}

TEST(ExportVerb, DefaultDtypeIsTheModelsOwn) {
  FARTHING_REQUIRE_SHARED(shared);
  const fs::path src = shared / "models/stories260K/stories260K.bin";
  const fs::path tmp = fs::temp_directory_path() / ("farthing_export_dtype_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  // llama2.c stores f32: the default export is f32, one file (far below the default 5GB).
  ASSERT_EQ(run_export_verb({"--from", src.string(), "--out", (tmp / "f32").string()}), 0);
  EXPECT_EQ(header_dtypes(tmp / "f32/model.safetensors"), std::set<std::string>{"F32"});
  EXPECT_FALSE(fs::exists(tmp / "f32/model.safetensors.index.json"));
  EXPECT_EQ(read_json(tmp / "f32/config.json")["torch_dtype"], "float32");
  // A bf16 safetensors model (sharded, 200KB shards) exports as bf16 by default, bit for bit.
  ASSERT_EQ(run_export_verb({"--from", src.string(), "--out", (tmp / "bf16").string(), "--dtype", "bf16"}), 0);
  ASSERT_EQ(run_export_verb({"--from", (tmp / "bf16").string(), "--out", (tmp / "again").string(), "--max-shard-size",
                        "200KB"}),
            0);
  EXPECT_EQ(read_json(tmp / "again/config.json")["torch_dtype"], "bfloat16");
  const nlohmann::json index = read_json(tmp / "again/model.safetensors.index.json");
  std::set<std::string> files;
  for (const auto& [name, file] : index["weight_map"].items()) files.insert(file.get<std::string>());
  EXPECT_GE(files.size(), 2u);
  for (const std::string& f : files) {
    EXPECT_EQ(header_dtypes(tmp / "again" / f), std::set<std::string>{"BF16"}) << f;
    EXPECT_LE(fs::file_size(tmp / "again" / f), 200000u + 4096u) << f;  // + its header
  }
  const ckpt::ModelFile a = ckpt::read_safetensors(tmp / "bf16"), b = ckpt::read_safetensors(tmp / "again");
  for (const auto& [name, t] : a.tensors) {
    const ckpt::ModelTensor& u = b.expect(name, t.shape);
    EXPECT_EQ(std::memcmp(u.f32(), t.f32(), size_t(t.numel()) * 4), 0) << name;
  }
  // --dtype still overrides; a size that is not one is refused naming the option.
  ASSERT_EQ(run_export_verb({"--from", (tmp / "bf16").string(), "--out", (tmp / "f16").string(), "--dtype", "f16"}), 0);
  EXPECT_EQ(header_dtypes(tmp / "f16/model.safetensors"), std::set<std::string>{"F16"});
  try {
    run_export_verb({"--from", src.string(), "--out", (tmp / "x").string(), "--max-shard-size", "5 parsecs"});
    ADD_FAILURE() << "--max-shard-size '5 parsecs' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-shard-size '5 parsecs' is not a size"), std::string::npos) << e.what();
  }
  fs::remove_all(tmp);
}

// A tiny GGUF (byte-level vocab of 256 bytes + "Ġt", one norm tensor) with a chat template.
void write_tiny_gguf(const fs::path& path) {
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
  g.add_u32("tokenizer.ggml.padding_token_id", 256);
  const std::string norm(4 * 32, '\0');
  g.add_tensor("output_norm.weight", {32}, 0, norm);
  g.write(path);
}

void write_json(const fs::path& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(2) << "\n";
}

std::string file_text(const fs::path& path) {
  const auto bytes = test::read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

TEST(ExportVerb, HfFolderKeepsItsChatTemplateAndSpecialTokens) {
  const fs::path tmp = fs::temp_directory_path() / ("farthing_export_hf_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  write_tiny_gguf(tmp / "tiny.gguf");
  ASSERT_EQ(run_export_verb({"--from", (tmp / "tiny.gguf").string(), "--out", (tmp / "src").string()}), 0);
  // A GGUF's padding id is the config's and generation_config's pad_token_id.
  EXPECT_EQ(read_json(tmp / "src/config.json")["pad_token_id"], 256);
  EXPECT_EQ(read_json(tmp / "src/generation_config.json")["pad_token_id"], 256);
  // The source folder as a chat model ships it: its own template and eos ("Ġt", id 256, which no
  // name-based guess of the tokenizer loader picks), and generation settings of its own.
  nlohmann::json tokenizer_config = read_json(tmp / "src/tokenizer_config.json");
  tokenizer_config["chat_template"] = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}";
  tokenizer_config["eos_token"] = "\xC4\xA0t";
  write_json(tmp / "src/tokenizer_config.json", tokenizer_config);
  nlohmann::json config = read_json(tmp / "src/config.json");
  config["eos_token_id"] = 256;
  config["pad_token_id"] = 256;
  write_json(tmp / "src/config.json", config);
  write_json(tmp / "src/generation_config.json", {{"eos_token_id", 256}, {"temperature", 0.25}});

  ASSERT_EQ(run_export_verb({"--from", (tmp / "src").string(), "--out", (tmp / "out").string()}), 0);
  EXPECT_EQ(file_text(tmp / "out/tokenizer_config.json"), file_text(tmp / "src/tokenizer_config.json"));
  const nlohmann::json exported = read_json(tmp / "out/tokenizer_config.json");
  EXPECT_EQ(exported["chat_template"], tokenizer_config["chat_template"]);
  EXPECT_EQ(exported["eos_token"], "\xC4\xA0t");
  EXPECT_EQ(read_json(tmp / "out/config.json")["eos_token_id"], 256);
  EXPECT_EQ(read_json(tmp / "out/config.json")["pad_token_id"], 256);
  EXPECT_EQ(read_json(tmp / "out/generation_config.json"), read_json(tmp / "src/generation_config.json"));
  EXPECT_EQ(file_text(tmp / "out/tokenizer.json"), file_text(tmp / "src/tokenizer.json"));
  fs::remove_all(tmp);
}

// Each refused --from: one error naming what it takes, and no --out directory.
TEST(ExportVerb, UnreadableFromIsRefusedWritingNothing) {
  const fs::path tmp = fs::temp_directory_path() / ("farthing_export_bad_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "empty_dir");
  { std::ofstream(tmp / "garbage.bin") << "not a model"; }
  const fs::path out = tmp / "out";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(tmp / "missing").string(), "does not exist; expected a run directory (its checkpoints/latest)"},
      {(tmp / "empty_dir").string(), "neither checkpoints/latest (a run directory) nor config.json"},
      {(tmp / "garbage.bin").string(), "as llama2.c .bin (no HDF5 signature"},
      {"latest", "the newest checkpoint of which run? Add --recipe RECIPE"},
  };
  for (const auto& [from, expected] : cases) {
    try {
      run_export_verb({"--from", from, "--out", out.string()});
      ADD_FAILURE() << "--from " << from << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      if (from != "latest") {
        EXPECT_NE(message.find("a .gguf, or a llama2.c .bin"), std::string::npos) << message;
      }
    }
    EXPECT_FALSE(fs::exists(out)) << "--from " << from << " wrote " << out;
  }
  fs::remove_all(tmp);
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
  ASSERT_EQ(run_export_verb({"--from", src.string(), "--out", out.string()}), 0);
  const data::Tokenizer tok = data::load_tokenizer(out / "tokenizer.json");
  EXPECT_EQ(tok.encode(" t"), (std::vector<int32_t>{256}));
  EXPECT_NE(test::read_file_bytes(out / "tokenizer_config.json").size(), 0u);
  const auto config_bytes = test::read_file_bytes(out / "tokenizer_config.json");
  EXPECT_NE(std::string(config_bytes.begin(), config_bytes.end()).find("{{ x }}"), std::string::npos);
  EXPECT_EQ(run_export_verb({"--from", src.string()}), 2);
  EXPECT_EQ(run_export_verb({"--nope"}), 2);
  fs::remove_all(out);
  fs::remove(src);
}

}  // namespace

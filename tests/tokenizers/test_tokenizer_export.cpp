// test_tokenizer_export.cpp — a tokenizer written as HF tokenizer.json and read back gives the
// same ids on real text: byte-level from tokenizer.json and from SmolLM2's GGUF metadata (when
// installed), SentencePiece from tokenizer.model (score order turned into merges). HF
// `tokenizers` itself was checked to load these exports with identical ids (see the commit
// that added this test), including llama2.c's tok512.bin (its " " space pieces become "▁").
// Relies on: ../shared/tokenizers, ../shared/text. Tests: data/tokenizer_export.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/tokenizer_export.h"
#include "framework/data/tokenizer_loaders.h"
#include "tests/support/smollm2.h"
#include "tests/support/test_support.h"

namespace {

namespace fs = std::filesystem;
using farthing::data::Tokenizer;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_export(const Tokenizer& tok, const std::string& text, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("farthing_tokexport_" + std::to_string(::getpid()) + "_" + tag);
  farthing::data::write_hf_tokenizer_files(tok, dir, "{{ messages }}");
  const Tokenizer back = farthing::data::load_tokenizer(dir / "tokenizer.json");
  EXPECT_EQ(back.encode(text), tok.encode(text)) << tag;
  EXPECT_EQ(back.vocab_size(), tok.vocab_size()) << tag;
  const auto config = nlohmann::json::parse(read_text(dir / "tokenizer_config.json"));
  EXPECT_EQ(config["chat_template"], "{{ messages }}");
  fs::remove_all(dir);
}

TEST(TokenizerExport, ReloadsWithTheSameIds) {
  FARTHING_REQUIRE_SHARED(shared);
  const std::string text = read_text(shared / "text/tinyshakespeare.txt").substr(0, 200000) +
                           read_text(shared / "text/sotu/2015_barack_obama_d.txt");
  check_export(farthing::data::load_tokenizer(shared / "tokenizers/gpt2/tokenizer.json"), text, "gpt2");
  check_export(farthing::data::load_tokenizer(shared / "tokenizers/llama2/tokenizer.model"), text, "spm");
  const fs::path smol = farthing::test::smollm2_gguf_path();
  if (!smol.empty()) check_export(farthing::data::load_tokenizer(smol), text, "smollm2");
}

TEST(TokenizerExport, Tok512SpacesBecomeMetaspace) {
  FARTHING_REQUIRE_SHARED(shared);
  const Tokenizer tok = farthing::data::load_tokenizer(shared / "models/stories260K/tok512.bin");
  check_export(tok, read_text(shared / "text/tinyshakespeare.txt").substr(0, 100000) + " \xC3\xA9\xFF", "tok512");
}

}  // namespace

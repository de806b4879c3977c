// test_tokenizer_llamacpp.cpp — llama.cpp's tokenizer test vectors (its test-tokenizer-0 files):
// the vocabulary comes from a tokenizer-only GGUF, each test string from the .inp file
// (strings separated by lines "__ggml_vocab_test__", each followed by a newline that is not
// part of the string) and the expected ids from the matching line of .out (no BOS, special
// tokens not parsed: llama.cpp tokenizes with add_special=false, parse_special=false).
// The vectors run against the GGUF vocabularies themselves and against the same vocabularies
// from their original files (gpt2/tokenizer.json; llama2/tokenizer.model, which is what
// llama.cpp's converter copies into the llama-spm GGUF). NOTE: the two GGUFs in ../shared are
// damaged — every byte sequence that was not valid UTF-8 (binary floats: the llama-spm scores,
// gpt-2's layer_norm_epsilon) was replaced by U+FFFD, as by a text-mode copy — so their tests
// skip, saying so, until the binaries are restored; the original-file tests still run, and
// so do GGUFs rebuilt here from the original files with llama.cpp's converter's keys (which
// exercise the GGUF metadata reader and tokenizer.ggml.* loading on the same vectors).
// Relies on: ../shared/tokenizers. Tests: tokenizer_loaders, sentencepiece_model, tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "framework/ckpt/gguf.h"
#include "framework/data/tokenizer_loaders.h"
#include "framework/data/sentencepiece_model.h"
#include "framework/data/utf8.h"
#include "tests/support/gguf_builder.h"
#include "tests/support/test_support.h"

namespace {

using farthing::data::Tokenizer;

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const std::filesystem::path& base) {
  const std::string inp = read_text(base.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  std::ifstream out(base.string() + ".out");
  std::vector<Case> cases;
  std::string line;
  for (const std::string& t : texts) {
    std::getline(out, line);
    Case c{t, {}};
    std::istringstream ls(line);
    int32_t id;
    while (ls >> id) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::filesystem::path vectors(const std::string& name) {
  return farthing::test::shared_dir() / "tokenizers/llamacpp-vocab" / name;
}

// Whether a file shows the signature of a lossy UTF-8 text conversion: it decodes as UTF-8
// as a whole (binary GGUF data never does) and holds U+FFFD replacement characters.
bool damaged_by_text_conversion(const std::filesystem::path& path) {
  const std::string bytes = read_text(path);
  size_t replacements = 0;
  for (size_t pos = 0; (pos = bytes.find("\xEF\xBF\xBD", pos)) != std::string::npos; pos += 3) ++replacements;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t n = farthing::data::utf8_char_len(bytes, pos);
    if (n == 1 && uint8_t(bytes[pos]) >= 0x80) return false;
    pos += n;
  }
  return replacements > 0;
}

void run_vocab(const std::filesystem::path& base, const Tokenizer& tok) {
  const std::vector<Case> cases = read_cases(base);
  ASSERT_EQ(cases.size(), 46u) << "the .inp file should hold 46 strings";
  int failures = 0;
  for (const Case& c : cases) {
    const std::vector<int32_t> got = tok.encode(c.text, /*parse_special=*/false);
    EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'";
    failures += got != c.ids;
  }
  EXPECT_EQ(failures, 0);
}

void run_gguf(const std::string& name) {
  const std::filesystem::path base = vectors(name);
  if (damaged_by_text_conversion(base)) {
    GTEST_SKIP() << base.string() << " was damaged by a UTF-8 text conversion (binary bytes replaced "
                 << "by U+FFFD); restore it from llama.cpp's models/ folder to run this test";
  }
  farthing::ckpt::GgufFile gguf(base);
  run_vocab(base, Tokenizer(farthing::data::gguf_tokenizer_spec(gguf)));
}

TEST(TokenizerLlamaCpp, Gpt2VectorsWithGpt2TokenizerJson) {
  FARTHING_REQUIRE_SHARED(shared);
  run_vocab(vectors("ggml-vocab-gpt-2.gguf"), farthing::data::load_tokenizer(shared / "tokenizers/gpt2/tokenizer.json"));
}

TEST(TokenizerLlamaCpp, LlamaSpmVectorsWithLlama2TokenizerModel) {
  FARTHING_REQUIRE_SHARED(shared);
  run_vocab(vectors("ggml-vocab-llama-spm.gguf"),
            farthing::data::load_tokenizer(shared / "tokenizers/llama2/tokenizer.model"));
}

TEST(TokenizerLlamaCpp, Gpt2VectorsWithTheGguf) {
  FARTHING_REQUIRE_SHARED(shared);
  run_gguf("ggml-vocab-gpt-2.gguf");
}

TEST(TokenizerLlamaCpp, LlamaSpmVectorsWithTheGguf) {
  FARTHING_REQUIRE_SHARED(shared);
  run_gguf("ggml-vocab-llama-spm.gguf");
}

// A tokenizer-only GGUF with llama.cpp's keys, written from a spec loaded from another format.
std::filesystem::path rebuild_gguf(const farthing::data::TokenizerSpec& spec, const std::string& model,
                                   const std::string& name) {
  farthing::test::GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_string("tokenizer.ggml.model", model);
  b.add_strings("tokenizer.ggml.tokens", spec.pieces);
  std::vector<int32_t> types(spec.pieces.size(), 1);
  for (const auto& t : spec.added_tokens) types[size_t(t.id)] = t.special ? 3 : 4;
  if (model == "gpt2") {
    b.add_string("tokenizer.ggml.pre", "gpt-2");
    std::vector<std::string> merges;
    for (const auto& [l, r] : spec.merges) merges.push_back(l + " " + r);
    b.add_strings("tokenizer.ggml.merges", merges);
  } else {
    for (size_t id = 0; id < spec.pieces.size(); ++id) {
      const std::string& p = spec.pieces[id];
      if (p.size() == 6 && p.starts_with("<0x")) types[id] = 6;
    }
    types[size_t(spec.unk_id)] = 2;
    b.add_f32s("tokenizer.ggml.scores", spec.scores);
    b.add_u32("tokenizer.ggml.unknown_token_id", uint32_t(spec.unk_id));
    b.add_bool("tokenizer.ggml.add_space_prefix", true);
  }
  b.add_i32s("tokenizer.ggml.token_type", types);
  const auto path = std::filesystem::temp_directory_path() / ("farthing_" + std::to_string(::getpid()) + "_" + name);
  b.write(path);
  return path;
}

TEST(TokenizerLlamaCpp, Gpt2VectorsWithARebuiltGguf) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto path = rebuild_gguf(farthing::data::load_hf_tokenizer_spec(shared / "tokenizers/gpt2/tokenizer.json"),
                                 "gpt2", "gpt2.gguf");
  run_vocab(vectors("ggml-vocab-gpt-2.gguf"), farthing::data::load_tokenizer(path));
  std::filesystem::remove(path);
}

TEST(TokenizerLlamaCpp, LlamaSpmVectorsWithARebuiltGguf) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto path = rebuild_gguf(
      farthing::data::load_sentencepiece_model_spec(shared / "tokenizers/llama2/tokenizer.model"), "llama", "spm.gguf");
  run_vocab(vectors("ggml-vocab-llama-spm.gguf"), farthing::data::load_tokenizer(path));
  std::filesystem::remove(path);
}

TEST(TokenizerLlamaCpp, DamagedGgufFailsWithAClearError) {
  FARTHING_REQUIRE_SHARED(shared);
  const std::filesystem::path base = vectors("ggml-vocab-gpt-2.gguf");
  if (!damaged_by_text_conversion(base)) GTEST_SKIP() << "the GGUF is intact";
  try {
    farthing::ckpt::GgufFile gguf(base);
    FAIL() << "a damaged GGUF parsed";
  } catch (const farthing::Error& e) {
    EXPECT_NE(std::string(e.what()).find(base.string()), std::string::npos) << e.what();
  }
}

}  // namespace

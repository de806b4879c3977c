// test_token_file.cpp — the token file format (write -> read, bad files rejected) and the
// `farthing tokenize` verb driven through the command line's run_command:
// --ids, .txt and .jsonl inputs with --bos/--eos, usage errors.
// Relies on: ../shared/models/stories260K/tok512.bin (verb tests). Tests: data/token_file,
// tools/farthing/verb_tokenize.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/data/token_file.h"
#include "framework/data/tokenizer_loaders.h"
#include "tests/support/test_support.h"
#include "tools/farthing/cli.h"

namespace {

// `farthing tokenize ARGS...` as the command line runs it (only the tokenize verb is linked here).
int run_tokenize_verb(std::vector<std::string> args) {
  args.insert(args.begin(), "tokenize");
  return farthing::cli::run_command(args);
}

namespace fs = std::filesystem;
using namespace farthing;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("farthing_tokfile_" + std::to_string(::getpid()) + "_" + name);
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << s;
}

TEST(TokenFile, WriteReadAndRejectBadFiles) {
  const fs::path p = temp_path("ids.bin");
  const std::vector<int32_t> ids = {0, 5, 511, 42};
  data::write_token_file(p, ids, 512);
  EXPECT_EQ(fs::file_size(p), 24u + 16u);
  const data::TokenFile t = data::read_token_file(p);
  EXPECT_EQ(t.vocab_size, 512u);
  EXPECT_EQ(t.ids, (std::vector<uint32_t>{0, 5, 511, 42}));
  EXPECT_THROW(data::write_token_file(p, std::vector<int32_t>{512}, 512), Error);
  const auto bytes = test::read_file_bytes(temp_path("ids.bin"));
  write_text(p, std::string(bytes.begin(), bytes.end() - 2));  // truncated
  EXPECT_THROW(data::read_token_file(p), Error);
  write_text(p, "NOPE" + std::string(bytes.begin() + 4, bytes.end()));
  EXPECT_THROW(data::read_token_file(p), Error);
  fs::remove(p);
}

TEST(TokenizeVerb, TextAndJsonlToTokenFiles) {
  FARTHING_REQUIRE_SHARED(shared);
  const std::string tok_path = (shared / "models/stories260K/tok512.bin").string();
  const data::Tokenizer tok = data::load_tokenizer(tok_path);
  const fs::path txt = temp_path("in.txt"), jsonl = temp_path("in.jsonl"), out = temp_path("out.bin");
  write_text(txt, "Once upon a time, there was a cat.");
  ASSERT_EQ(run_tokenize_verb({"--tokenizer", tok_path, txt.string(), "-o", out.string()}), 0);
  std::vector<uint32_t> want;
  for (int32_t id : tok.encode("Once upon a time, there was a cat.")) want.push_back(uint32_t(id));
  EXPECT_EQ(data::read_token_file(out).ids, want);

  write_text(jsonl, "{\"text\": \"Hi.\"}\n\n{\"text\": \"Bye.\", \"id\": 2}\n");
  ASSERT_EQ(run_tokenize_verb({"--tokenizer", tok_path, jsonl.string(), "-o", out.string(), "--bos", "--eos"}), 0);
  std::vector<uint32_t> want2 = {1};
  for (int32_t id : tok.encode("Hi.")) want2.push_back(uint32_t(id));
  want2.push_back(2);
  want2.push_back(1);
  for (int32_t id : tok.encode("Bye.")) want2.push_back(uint32_t(id));
  want2.push_back(2);
  EXPECT_EQ(data::read_token_file(out).ids, want2);

  write_text(jsonl, "{\"body\": \"Hi.\"}\n");
  EXPECT_THROW(run_tokenize_verb({"--tokenizer", tok_path, jsonl.string(), "-o", out.string()}), Error);
  EXPECT_EQ(run_tokenize_verb({"--tokenizer", tok_path, "--ids", "Hello"}), 0);
  EXPECT_EQ(run_tokenize_verb({"--tokenizer", tok_path}), 2);
  EXPECT_EQ(run_tokenize_verb({"--bogus"}), 2);
  fs::remove(txt);
  fs::remove(jsonl);
  fs::remove(out);
}

}  // namespace

// test_tokenizer_bad_files.cpp — tokenizer, token and chat-template files that declare sizes or
// shapes the loaders once trusted (found by tests/fuzz): each is now a farthing::Error
// naming the file and what was expected, instead of an out-of-bounds write, a vector sized by a
// declared count, a stack overflow or a bare nlohmann/json exception.
//   tokenizer.json: a negative or huge token id; a Sequence nested past the limit; a value of the
//     wrong JSON type; a missing key read through a const json (undefined behaviour). FTOK: a token count whose byte size wraps; a header size below 24.
//   tokenizer_config.json: a chat_template list whose entries are not strings.
// Relies on: framework/data. Tests: tokenizer_loaders.cpp, token_file.cpp, dataset_chat.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/dataset_chat.h"
#include "framework/data/token_file.h"
#include "framework/data/tokenizer_loaders.h"
#include "framework/data/utf8.h"

namespace {

using namespace farthing;
namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("farthing_tokbad_" + std::to_string(::getpid()) + "_" + name);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error was thrown";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

// A small byte-level tokenizer.json that loads; tests break one field of it.
json byte_level_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[data::byte_level_char(uint8_t(b))] = b;
  vocab["ab"] = 256;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b"})}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"added_tokens", json::array({{{"id", 257}, {"content", "<|endoftext|>"}}})}};
}

TEST(TokenizerBadFiles, TokenIdsOutsideTheVocabularyRange) {
  const fs::path file = temp_path("tokenizer.json");
  json j = byte_level_json();
  write_bytes(file, j.dump());
  EXPECT_EQ(data::load_tokenizer(file).vocab_size(), 258);  // the unbroken file loads
  j["model"]["vocab"]["x"] = -1;  // wrote pieces[size_t(-1)]
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "piece 'x'", "id -1", "below 4194304"});
  j = byte_level_json();
  j["added_tokens"][0]["id"] = int64_t(1) << 40;  // sized the vocabulary by it: std::length_error / bad_alloc
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "added token", "1099511627776"});
  fs::remove(file);
}

TEST(TokenizerBadFiles, SequenceNestedPastTheLimit) {
  const fs::path file = temp_path("tokenizer.json");
  json j = byte_level_json();
  json pre = {{"type", "ByteLevel"}};
  for (int i = 0; i < 40; ++i) pre = {{"type", "Sequence"}, {"pretokenizers", json::array({pre})}};
  j["pre_tokenizer"] = pre;
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "pre_tokenizer Sequence", "deeper than 16"});
  j = byte_level_json();
  json norm = {{"type", "NFC"}};
  for (int i = 0; i < 40; ++i) norm = {{"type", "Sequence"}, {"normalizers", json::array({norm})}};
  j["normalizer"] = norm;
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "normalizer Sequence", "deeper than 16"});
  fs::remove(file);
}

TEST(TokenizerBadFiles, WrongJsonTypesNameTheFile) {
  const fs::path file = temp_path("tokenizer.json");
  json j = byte_level_json();
  j["model"]["vocab"]["x"] = "seven";  // json::type_error escaped with no file name
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "piece 'x'", "expected an integer"});
  j = byte_level_json();
  j["model"]["merges"] = json::array({json::array({1, 2})});
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {"tokenizer " + file.string() + " is malformed", "type_error"});
  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({7})}};
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "a pre_tokenizer is number", "expected an object"});
  fs::remove(file);
}

TEST(TokenizerBadFiles, MissingKeysAreErrorsNotUndefinedBehaviour) {
  // operator[] on a const json with a missing key is undefined behaviour: a Split without
  // "pattern" read freed memory (ASan, tests/fuzz regression uaf-split-without-pattern.json).
  const fs::path file = temp_path("tokenizer.json");
  json j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({
      {{"type", "Split"}, {"behavior", "Isolated"}}, {{"type", "ByteLevel"}}})}};
  write_bytes(file, j.dump());
  expect_error([&] { data::load_tokenizer(file); }, {file.string(), "only Split by Regex", "\"pattern\""});
  j = byte_level_json();
  j["post_processor"] = {{"type", "TemplateProcessing"}};  // no "single": loads, adds no BOS
  write_bytes(file, j.dump());
  EXPECT_FALSE(data::load_tokenizer(file).spec().add_bos);
  fs::remove(file);
}

std::string ftok_header(uint32_t header_bytes, uint64_t n) {
  std::string out = "FTOK";
  const uint32_t version = 1, vocab = 512;
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&vocab), 4);
  out.append(reinterpret_cast<const char*>(&header_bytes), 4);
  out.append(reinterpret_cast<const char*>(&n), 8);
  return out;
}

TEST(TokenizerBadFiles, TokenFileCountAndHeaderSize) {
  const fs::path file = temp_path("ids.tok");
  // 2^62 tokens: 4 * n wrapped to 0, so a bare 24-byte header passed every check and the reader
  // then sized a vector of 2^62 ids.
  write_bytes(file, ftok_header(24, uint64_t(1) << 62));
  expect_error([&] { data::read_token_file(file); }, {file.string(), "the token count", "overflows 64 bits"});
  // header size 0: the ids were read from the header itself.
  write_bytes(file, ftok_header(0, 1) + std::string(4, '\0'));
  expect_error([&] { data::read_token_file(file); }, {file.string(), "header size is 0", "at least 24"});
  fs::remove(file);
}

TEST(TokenizerBadFiles, ChatTemplateListOfNonStrings) {
  const fs::path file = temp_path("tokenizer_config.json");
  const fs::path tok = temp_path("tokenizer.json");
  json j = byte_level_json();
  j["added_tokens"].push_back({{"id", 258}, {"content", "<|im_end|>"}});
  write_bytes(tok, j.dump());
  const data::Tokenizer tokenizer = data::load_tokenizer(tok);
  write_bytes(file, json({{"chat_template", json::array({{{"name", 5}, {"template", "<|im_start|>"}}})}}).dump());
  EXPECT_EQ(data::resolve_chat_format(file.string(), tokenizer), data::ChatFormat::kChatML);  // the first entry
  write_bytes(file, json({{"chat_template", json::array({{{"name", "default"}, {"template", 42}}})}}).dump());
  expect_error([&] { data::resolve_chat_format(file.string(), tokenizer); },
               {file.string(), "\"chat_template\"", "string template"});
  fs::remove(file);
  fs::remove(tok);
}

}  // namespace

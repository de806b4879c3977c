// test_tokenizer_hf_goldens.cpp — farthing's tokenizers give exactly HF `tokenizers`' ids on
// real text: tinyshakespeare and four State of the Union addresses (count, FNV-1a 64 of all
// ids, and the first ids), plus short edge-case strings (all ids), for the gpt2, llama2,
// llama3 and qwen2_5 tokenizer.json files. Golden: tests/data/tokenizers/hf_goldens.json from
// tools/goldens/gen_tokenizer_goldens.py.
// Relies on: ../shared/tokenizers, ../shared/text. Tests: tokenizer, tokenizer_loaders, pretokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/data/tokenizer_loaders.h"
#include "tests/support/test_support.h"

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fnv1a64(const std::vector<int32_t>& ids) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int32_t id : ids) {
    const uint32_t v = uint32_t(id);
    for (int k = 0; k < 4; ++k) {
      h ^= (v >> (8 * k)) & 0xFF;
      h *= 0x100000001B3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class HfGoldens : public ::testing::TestWithParam<const char*> {};

TEST_P(HfGoldens, IdsEqualHfTokenizers) {
  FARTHING_REQUIRE_SHARED(shared);
  const nlohmann::json golden =
      nlohmann::json::parse(read_text(farthing::test::test_data_dir() / "tokenizers/hf_goldens.json"));
  const std::string name = GetParam();
  const nlohmann::json& expected = golden["results"][name];
  const farthing::data::Tokenizer tok =
      farthing::data::load_tokenizer(shared / "tokenizers" / name / "tokenizer.json");
  const size_t first = golden["first_ids"].get<size_t>();
  for (const auto& rel : golden["texts"]) {
    const std::string text = read_text(shared / rel.get<std::string>());
    const std::vector<int32_t> ids = tok.encode(text);
    const nlohmann::json& e = expected["texts"][rel.get<std::string>()];
    const std::vector<int32_t> want_first = e["first"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got_first(ids.begin(), ids.begin() + std::ptrdiff_t(std::min(first, ids.size())));
    EXPECT_EQ(got_first, want_first) << name << " on " << rel;
    EXPECT_EQ(ids.size(), e["count"].get<size_t>()) << name << " on " << rel;
    EXPECT_EQ(fnv1a64(ids), e["fnv1a64"].get<std::string>()) << name << " on " << rel;
    EXPECT_EQ(tok.decode(ids), text) << name << " on " << rel << ": decode(encode(text)) != text";
  }
  const auto& strings = golden["strings"];
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string s = strings[i].get<std::string>();
    EXPECT_EQ(tok.encode(s), expected["strings"][i].get<std::vector<int32_t>>()) << name << " on '" << s << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfGoldens, ::testing::Values("gpt2", "llama2", "llama3", "qwen2_5"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace

// test_tokenizer_round_trip.cpp — decode(encode(x)) == x for arbitrary bytes: valid UTF-8 of
// every length, and invalid sequences (lone continuation bytes, overlongs, surrogates,
// truncated characters, 0xFF), for a byte-level tokenizer (GPT-2, Llama-3, Qwen2.5) and the
// byte-fallback ones (Llama-2 tokenizer.json and tokenizer.model, llama2.c tok512.bin).
// NOTE: a literal U+2581 "▁" in the input decodes as a space with SentencePiece-style
// tokenizers (the format cannot tell them apart; sentencepiece and HF do the same), so that
// one sample is checked with byte-level tokenizers only.
// Also the tokenizer in SmolLM2-135M's GGUF metadata (gpt2 model, "smollm" pre-tokenizer), when present.
// Relies on: ../shared/tokenizers, ../shared/models/stories260K. Tests: tokenizer, loaders.
#include <gtest/gtest.h>

#include "framework/data/tokenizer_loaders.h"
#include "framework/data/utf8.h"
#include "tests/support/smollm2.h"
#include "tests/support/test_support.h"

namespace {

using farthing::data::Tokenizer;

std::vector<std::string> samples(bool byte_level) {
  std::vector<std::string> out = {
      "Hello world", " leading space", "trailing space ", "  two  spaces\t\ttabs\n\nnewlines\r\n",
      "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80!",
      "\x80\x80 lone continuation", "overlong \xC0\xAF", "surrogate \xED\xA0\x80", "cut \xE2\x96",
      "\xFF\xFE bytes", "it's 1234567 o'clock's", "<s> not special?"};
  if (byte_level) out.push_back("\xE2\x96\x81 literal metaspace");
  farthing::test::SplitMix64 rng(7);
  for (int i = 0; i < 40; ++i) {  // random bytes, biased towards ASCII and UTF-8 lead bytes
    std::string s;
    const int n = int(rng.next() % 64);
    for (int k = 0; k < n; ++k) {
      const uint64_t r = rng.next();
      s += (r & 3) ? char(0x20 + (r >> 8) % 95) : char(r >> 16);
    }
    out.push_back(s);
  }
  return out;
}

void check_round_trip(const Tokenizer& tok) {
  const bool byte_level = tok.spec().kind == farthing::data::TokenizerKind::kByteLevel;
  for (const std::string& s : samples(byte_level)) {
    bool all_bytes_known = true;  // a byte without a token is dropped (tokenizer.h)
    for (char c : s) all_bytes_known &= !byte_level || tok.piece_id(farthing::data::byte_level_char(uint8_t(c))) >= 0;
    if (!all_bytes_known) continue;
    const std::vector<int32_t> ids = tok.encode(s, /*parse_special=*/false);
    EXPECT_EQ(tok.decode(ids), s) << tok.spec().source << ": round trip failed";
  }
}

TEST(TokenizerRoundTrip, ByteLevelAndByteFallback) {
  FARTHING_REQUIRE_SHARED(shared);
  for (const char* name : {"gpt2", "llama3", "qwen2_5", "llama2"}) {
    SCOPED_TRACE(name);
    check_round_trip(farthing::data::load_tokenizer(shared / "tokenizers" / name / "tokenizer.json"));
  }
}

TEST(TokenizerRoundTrip, Llama2cTok512) {
  FARTHING_REQUIRE_SHARED(shared);
  const Tokenizer tok = farthing::data::load_tokenizer(shared / "models/stories260K/tok512.bin");
  EXPECT_EQ(tok.vocab_size(), 512);
  check_round_trip(tok);
}

TEST(TokenizerRoundTrip, SentencePieceModel) {
  FARTHING_REQUIRE_SHARED(shared);
  check_round_trip(farthing::data::load_tokenizer(shared / "tokenizers/llama2/tokenizer.model"));
}

}  // namespace

namespace {

TEST(TokenizerRoundTrip, SmolLM2GgufTokenizer) {
  const std::filesystem::path path = farthing::test::smollm2_gguf_path();
  if (path.empty()) GTEST_SKIP() << farthing::test::kSmolLM2SkipMessage;
  const Tokenizer tok = farthing::data::load_tokenizer(path);
  EXPECT_EQ(tok.vocab_size(), 49152);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  check_round_trip(tok);
  // ChatML specials are single tokens; digits are split one by one ("smollm" pre-tokenizer).
  const std::vector<int32_t> ids = tok.encode("<|im_start|>user\n2024<|im_end|>");
  ASSERT_GE(ids.size(), 7u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_TRUE(tok.encode("\x04").empty()) << "a byte without a token is dropped, as llama.cpp does";
  const std::vector<int32_t> digits = tok.encode("2024");
  ASSERT_EQ(digits.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(tok.token_bytes(digits[i]), std::string(1, "2024"[i]));
}

}  // namespace

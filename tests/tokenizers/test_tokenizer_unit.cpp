// test_tokenizer_unit.cpp — small, file-free checks of the tokenizer pieces: UTF-8 lengths,
// the byte-level alphabet, the merge loop's priority and tie rules, added-token splitting,
// and a tiny SentencePiece-style vocabulary with byte fallback.
// Relies on: nothing outside the project. Tests: utf8, bpe_merge, tokenizer.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/data/bpe_merge.h"
#include "framework/data/tokenizer.h"
#include "framework/data/utf8.h"

namespace {

using namespace farthing::data;

TEST(Utf8, CharLengths) {
  EXPECT_EQ(utf8_char_len("a", 0), 1u);
  EXPECT_EQ(utf8_char_len("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(utf8_char_len("\xE2\x96\x81", 0), 3u);      // ▁
  EXPECT_EQ(utf8_char_len("\xF0\x9F\x98\x80", 0), 4u);  // 😀
  EXPECT_EQ(utf8_char_len("\xC0\xAF", 0), 1u);          // overlong
  EXPECT_EQ(utf8_char_len("\xED\xA0\x80", 0), 1u);      // surrogate
  EXPECT_EQ(utf8_char_len("\xE2\x96", 0), 1u);          // truncated
  EXPECT_EQ(utf8_char_len("\xFF", 0), 1u);
}

TEST(Utf8, ByteLevelAlphabetIsGpt2s) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_level_char('a'), "a");
  EXPECT_EQ(byte_level_code_point(0), 256u);
  for (int b = 0; b < 256; ++b) {
    std::string out;
    ASSERT_TRUE(byte_level_decode(byte_level_char(uint8_t(b)), out));
    ASSERT_EQ(out, std::string(1, char(b)));
  }
}

TEST(BpeMerge, LowestPriorityFirstThenLeftmost) {
  // ids: a=0 b=1 ab=2 bb=3 abb=4
  MergeTable table;
  table.add(0, 1, {1.0f, 2});
  table.add(1, 1, {0.0f, 3});
  table.add(0, 3, {2.0f, 4});
  std::vector<BpeSymbol> s = {{0, 0, 1}, {1, 1, 1}, {1, 2, 1}};  // a b b
  bpe_merge(s, table);  // b b first (priority 0) -> a bb -> abb
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].id, 4);
  EXPECT_EQ(s[0].len, 3u);
  std::vector<BpeSymbol> t = {{1, 0, 1}, {1, 1, 1}, {1, 2, 1}};  // b b b: leftmost pair merges
  bpe_merge(t, table);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].id, 3);
  EXPECT_EQ(t[1].id, 1);
}

TokenizerSpec tiny_spm() {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePiece;
  spec.source = "tiny";
  spec.pieces = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    spec.pieces.push_back(buf);
  }
  for (const char* p : {"\xE2\x96\x81", "h", "i", "\xE2\x96\x81h", "hi"}) spec.pieces.push_back(p);
  spec.scores.assign(spec.pieces.size(), 0.0f);
  spec.scores[259 + 3] = -1.0f;  // ▁h
  spec.scores[259 + 4] = -0.5f;  // hi (better)
  spec.byte_fallback = true;
  spec.add_dummy_prefix = true;
  spec.unk_id = 0;
  spec.added_tokens = {{"<s>", 1, true, false, false}};
  return spec;
}

TEST(Tokenizer, SentencePieceScoresAndByteFallback) {
  const Tokenizer tok(tiny_spm());
  // "hi" -> ▁ h i; "hi" (-0.5) beats "▁h" (-1), then ▁ + hi has no piece: [▁, hi]
  EXPECT_EQ(tok.encode("hi"), (std::vector<int32_t>{259, 263}));
  // "é" has no piece: bytes C3 A9 -> <0xC3> <0xA9> (ids 3 + byte)
  EXPECT_EQ(tok.encode("\xC3\xA9"), (std::vector<int32_t>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok.decode(tok.encode("\xC3\xA9 hi")), "\xC3\xA9 hi");
}

TEST(Tokenizer, AddedTokensSplitBeforeBpe) {
  const Tokenizer tok(tiny_spm());
  const std::vector<int32_t> with = tok.encode("hi<s>hi", true);
  EXPECT_EQ(with, (std::vector<int32_t>{259, 263, 1, 259, 263}));
  const std::vector<int32_t> without = tok.encode("<s>", false);
  EXPECT_EQ(without.size(), 4u);  // ▁ < s > as pieces/bytes, not the special token
  EXPECT_NE(without[0], 1);
}

TEST(Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const Tokenizer tok(tiny_spm());
  const std::vector<int32_t> bad = {100000};
  EXPECT_THROW(tok.decode(bad), farthing::Error);
}

}  // namespace

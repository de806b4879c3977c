// tokenizer.h — one BPE tokenizer for every file format we read.
//
//  - kByteLevel (GPT-2, Llama-3, Qwen2.5, SmolLM2): split with the family's regexes, map each
//    byte to its byte-level token, merge by rank (HF merges / GGUF tokenizer.ggml.merges).
//  - kSentencePiece (Llama-2 tokenizer.json, llama.cpp "llama" GGUF vocab, llama2.c tok512.bin):
//    prepend a space, spaces become the space piece ("▁", or " " in tok512.bin), the segment is
//    one word of UTF-8 characters (split at word starts when no piece could merge across one,
//    which holds for every vocabulary we ship tests for), merged by rank (HF merges) or, without merges, by
//    best score of the merged piece (SentencePiece/llama.cpp/llama2.c); characters left without
//    a token fall back to <0xNN> byte tokens (or <unk>).
// Special/added tokens are split out of the text before either (longest match first).
// Loaders that build a TokenizerSpec from files live in tokenizer_loaders.h.
// NOTE: Qwen2.5's NFC normaliser is not applied: every shared test text is already NFC
// (checked by the golden script), and without it decode(encode(x)) == x for any input.
// Relies on: bpe_merge.h, pretokenizer.h, utf8.h. Tested by: tests/tokenizers/.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/data/bpe_merge.h"
#include "framework/data/pretokenizer.h"

namespace farthing::data {

enum class TokenizerKind : uint8_t { kByteLevel, kSentencePiece };

// Hash for heterogeneous lookup: maps keyed by std::string are searched with string_views.
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringViewHash, std::equal_to<>>;

struct AddedToken {
  std::string content;  // matched verbatim in the raw text
  int32_t id = -1;
  bool special = true;  // false: split even when special tokens are not parsed
  bool lstrip = false;  // swallow whitespace before it
  bool rstrip = false;  // swallow whitespace after it
};

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kByteLevel;
  std::string source;                // file name, for error messages
  std::vector<std::string> pieces;   // id -> piece as written in the file
  std::vector<float> scores;         // id -> score (score-ordered merging when merges is empty)
  std::vector<uint8_t> mergeable;    // id -> may be produced by a score merge (empty: all)
  std::vector<std::pair<std::string, std::string>> merges;  // rank order
  std::vector<std::string> split_patterns;                  // byte-level pre-tokenizer
  std::vector<AddedToken> added_tokens;
  bool ignore_merges = false;     // Llama-3: a pre-token that is itself a token is not merged
  bool byte_fallback = false;     // SentencePiece: unknown characters become <0xNN> tokens
  bool add_dummy_prefix = false;  // SentencePiece: prepend one space to each text segment
  std::string space_piece = "\xE2\x96\x81";  // "▁"
  int32_t bos_id = -1, eos_id = -1, unk_id = -1;
  bool add_bos = false;  // whether encode_with_bos() should prepend BOS for this family
};

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerSpec spec);

  // Token ids of text. parse_special: split out special added tokens (HF's default); tokens
  // marked special=false are always split.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // Concatenated bytes of the tokens (special tokens as their text). The SentencePiece
  // dummy-prefix space is removed from the start, so decode(encode(x)) == x.
  std::string decode(std::span<const int32_t> ids) const;
  // One token's bytes, without prefix handling.
  std::string token_bytes(int32_t id) const;

  int32_t vocab_size() const { return int32_t(spec_.pieces.size()); }
  const TokenizerSpec& spec() const { return spec_; }
  int32_t bos_id() const { return spec_.bos_id; }
  int32_t eos_id() const { return spec_.eos_id; }
  int32_t piece_id(std::string_view piece) const;  // -1 when absent

 private:
  void encode_segment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_byte_level_word(std::string_view word, std::vector<int32_t>& out) const;
  void encode_sentencepiece(std::string_view text, std::vector<int32_t>& out) const;
  void encode_sentencepiece_word(std::string_view word, std::vector<int32_t>& out) const;
  bool cache_lookup(std::string_view word, std::vector<int32_t>& out) const;
  void cache_store(std::string_view word, const std::vector<int32_t>& ids) const;

  TokenizerSpec spec_;
  StringMap<int32_t> piece_to_id_;
  std::vector<std::string> token_bytes_;      // id -> raw bytes it decodes to
  StringMap<int32_t> bytes_to_id_;            // byte-level: raw bytes -> id
  std::vector<int32_t> byte_ids_;             // byte-level: byte -> id; SentencePiece: <0xNN>
  std::vector<uint8_t> is_byte_token_;
  MergeTable merges_;
  RegexSplitter splitter_;
  std::vector<std::vector<int32_t>> added_by_first_byte_;  // indices into added_tokens
  // SentencePiece: no piece holds a space piece after another character, so merges never
  // cross the start of a "▁word" and each such word can be merged (and cached) on its own.
  bool split_words_at_spaces_ = false;
  // Per-word cache (words repeat: "the", " of").
  mutable StringMap<std::vector<int32_t>> word_cache_;
  mutable std::mutex cache_mutex_;
};

}  // namespace farthing::data

// pretokenizer.h — splits text into pre-tokens with a sequence of PCRE2 regexes, HF "Split"
// with behaviour "Isolated": every match is a piece and so is every gap between matches.
// Each regex is applied to each piece the previous one produced (llama.cpp's regex lists).
//
// Compiled with UTF + UCP (\p{L}, \s Unicode-aware) and MATCH_INVALID_UTF, so invalid bytes
// never match and fall into gaps: byte-level BPE then encodes them byte by byte.
// Relies on: PCRE2 (8-bit). Tested by: tests/tokenizers/ (golden ids against HF tokenizers).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace farthing::data {

// The pre-tokenizer patterns of the families we know.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class RegexSplitter {
 public:
  RegexSplitter();
  explicit RegexSplitter(const std::vector<std::string>& patterns);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;

  bool empty() const;
  // Appends the pieces of text (views into text) to out; with no patterns, text itself.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace farthing::data

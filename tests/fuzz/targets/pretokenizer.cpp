// Fuzz target: the pre-tokenizer's regex splitter (PCRE2), as tokenizer.json's Split patterns
// reach it. Input: up to three patterns, each ending at a NUL byte, then the text to split.
// The pieces must cover the text exactly, in order.
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/pretokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> patterns;
  size_t at = 0;
  while (patterns.size() < 3) {
    const size_t nul = input.find('\0', at);
    if (nul == std::string::npos) break;
    patterns.push_back(input.substr(at, nul - at));
    at = nul + 1;
  }
  const std::string text = input.substr(at);
  fuzz::guarded([&] {
    const data::RegexSplitter splitter(patterns);
    std::vector<std::string_view> pieces;
    splitter.split(text, pieces);
    std::string joined;
    for (std::string_view p : pieces) joined += p;
    if (joined != text) {
      std::fprintf(stderr, "fuzz: the pre-tokenizer pieces do not cover the text\n");
      std::abort();
    }
  });
  return 0;
}

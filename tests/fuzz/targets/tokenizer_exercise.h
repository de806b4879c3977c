// tokenizer_exercise.h — what the tokenizer targets do with a tokenizer a file gave them:
// encode fixed texts (ASCII, digits, multi-byte UTF-8, invalid UTF-8, special-token text), and
// decode every id it produced and every id of the vocabulary.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "framework/data/tokenizer.h"

namespace farthing::fuzz {

inline void exercise_tokenizer(const data::Tokenizer& tokenizer) {
  static const std::string kTexts[] = {
      "Hello world, 123 and 4567!", "  leading spaces\n\ttabs\r\n", "na\xC3\xAFve caf\xC3\xA9 \xE2\x96\x81 \xF0\x9F\x98\x80",
      std::string("bad \xFF\xFE utf8 \xC3", 14), "<s>A</s><|im_start|>user<|im_end|>", ""};
  for (const std::string& text : kTexts) {
    for (bool special : {true, false}) {
      const std::vector<int32_t> ids = tokenizer.encode(text, special);
      (void)tokenizer.decode(ids);
    }
  }
  const int32_t n = std::min<int32_t>(tokenizer.vocab_size(), 4096);
  std::vector<int32_t> all(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) all[size_t(i)] = i;
  (void)tokenizer.decode(all);
}

}  // namespace farthing::fuzz

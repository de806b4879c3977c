// byte_tokenizer.h — the tokenizer the data targets encode with: byte-level, no merges (byte b
// is token b), plus the special tokens of every built-in chat format, so that any format a
// template names resolves (its end-of-turn marker is one token).
#pragma once
#include <string>

#include "framework/data/tokenizer.h"
#include "framework/data/utf8.h"

namespace farthing::fuzz {

inline const data::Tokenizer& byte_tokenizer() {
  static const data::Tokenizer tokenizer = [] {
    data::TokenizerSpec spec;
    spec.kind = data::TokenizerKind::kByteLevel;
    spec.source = "fuzz-byte-tokenizer";
    for (int b = 0; b < 256; ++b) spec.pieces.push_back(data::byte_level_char(uint8_t(b)));
    for (const char* special : {"<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>",
                                "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
      spec.added_tokens.push_back({special, int32_t(spec.pieces.size())});
      spec.pieces.push_back(special);
    }
    spec.scores.assign(spec.pieces.size(), 0.0f);
    spec.bos_id = 256;
    spec.eos_id = 257;
    return data::Tokenizer(std::move(spec));
  }();
  return tokenizer;
}

}  // namespace farthing::fuzz

// tokenizer_export.h — writes a Tokenizer as Hugging Face tokenizer.json + tokenizer_config.json,
// so an exported checkpoint (ckpt/safetensors.h) carries a tokenizer transformers can load,
// whatever file the tokenizer came from (GGUF metadata, tok512.bin, tokenizer.model).
//
// Byte-level: every pre-tokenizer regex becomes a Split (Isolated) in a Sequence ending with
// ByteLevel(use_regex=false) — exactly the splitting farthing does. SentencePiece-style: the
// Prepend/Replace "▁" normaliser and byte fallback; score-ordered vocabularies get merges listed
// by descending score of the merged piece (as HF's SentencePiece converter does); tok512.bin's
// " " space pieces are written as "▁".
// Relies on: tokenizer.h, nlohmann/json. Tested by: tests/tokenizers/test_tokenizer_export.cpp.
#pragma once

#include <filesystem>
#include <string>

#include "framework/data/tokenizer.h"

namespace farthing::data {

// Writes dir/tokenizer.json and dir/tokenizer_config.json (with chat_template when non-empty).
void write_hf_tokenizer_files(const Tokenizer& tokenizer, const std::filesystem::path& dir,
                              const std::string& chat_template = "");

}  // namespace farthing::data

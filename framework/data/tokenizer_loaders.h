// tokenizer_loaders.h — builds a Tokenizer from the files users bring.
//
//  - HF tokenizer.json, model type BPE: byte-level (ByteLevel pre-tokenizer, alone or after
//    Split/Digits regexes: GPT-2, Llama-3, Qwen2.5, SmolLM2) or SentencePiece-style
//    (Prepend/Replace "▁" normaliser or Metaspace, byte_fallback: Llama-2). added_tokens are
//    split out before BPE. Anything else is refused with an Error naming the construct.
//  - llama2.c tok512.bin: int32 max_token_length, then per token float32 score, int32 length,
//    bytes. Score-ordered merging, " " as the space piece, byte fallback <0xNN>.
//  - SentencePiece tokenizer.model: see sentencepiece_model.h.
//  - GGUF metadata: tokenizer.ggml.model "gpt2" (tokens + merges, regexes chosen by
//    tokenizer.ggml.pre as llama.cpp does) or "llama" (tokens + scores + token_type).
// Relies on: tokenizer.h, ckpt/gguf.h, nlohmann/json. Tested by: tests/tokenizers/.
#pragma once

#include <filesystem>

#include "framework/ckpt/gguf.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

TokenizerSpec load_hf_tokenizer_spec(const std::filesystem::path& path);
TokenizerSpec load_llama2c_tokenizer_spec(const std::filesystem::path& path);
TokenizerSpec gguf_tokenizer_spec(const ckpt::GgufFile& gguf);

// Picks the loader by name: *.json (or a directory holding tokenizer.json), *.gguf,
// *.model (SentencePiece, sentencepiece_model.h), else
// llama2.c's tokenizer format.
Tokenizer load_tokenizer(const std::filesystem::path& path);

}  // namespace farthing::data

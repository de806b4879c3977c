// sentencepiece_model.h — SentencePiece's tokenizer.model (a ModelProto protobuf) as a
// TokenizerSpec, for BPE models such as Llama-2's. This is the very data llama.cpp's converter
// copies into a "llama" GGUF vocabulary (pieces, scores, types), so both encode alike.
//
// Parsed fields (protobuf wire format, no protobuf library): ModelProto.pieces (1) =
// SentencePiece{piece (1), score (2), type (3)}; trainer_spec (2): model_type (3, must be BPE = 2),
// byte_fallback (35); normalizer_spec (3): add_dummy_prefix (3). Piece types as in llama.cpp:
// 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
// Relies on: tokenizer.h, ckpt/mapped_file.h. Tested by: tests/tokenizers/test_tokenizer_llamacpp.cpp.
#pragma once

#include <filesystem>

#include "framework/data/tokenizer.h"

namespace farthing::data {

TokenizerSpec load_sentencepiece_model_spec(const std::filesystem::path& path);

}  // namespace farthing::data

// dataset_jsonl.h — a JSONL training file into a token stream, one document per line.
//
// Each non-empty line is one JSON object; the first of these keys that is present decides:
//   "messages": [{"role", "content"}, ...]  rendered with the chat template
//        (DatasetOptions::chat_template, dataset_chat.h); loss on each assistant message's
//        content and its end-of-turn token only. BOS (when the rendered text does not already
//        start with it, as Llama-3's does) and EOS are not trained: the turn's end-of-turn
//        token is what teaches the model to stop.
//   "prompt" + "response" (or "completion", TRL's name): loss on the response only; EOS is
//        trained (the model learns to stop after a response), BOS is not.
//   "text": loss on every token, BOS and EOS included (as for plain text files).
// Other keys are ignored ("id", "source", ...), so the precedence matters for rows carrying
// several, like UltraChat's "prompt" + "messages". Text fields are encoded with
// parse_special = false (data cannot inject control tokens); rendered chats with true, because
// the template's own markers are special tokens. Prompt and response are encoded separately, so
// the response starts on a token boundary, as it does when generated after the prompt.
// Errors name file:line and what was expected.
// Relies on: dataset_chat.h, packing.h, tokenizer.h, nlohmann/json.
// Tested by: tests/datasets/test_dataset_jsonl.cpp, test_dataset_chat.cpp.
#pragma once

#include <cstdint>
#include <filesystem>

#include "framework/data/dataset_options.h"
#include "framework/data/packing.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

// Appends every document of `path` to `stream`, checking each id is below vocab_size.
void read_jsonl_documents(const std::filesystem::path& path, const Tokenizer& tokenizer, const DatasetOptions& options,
                          int64_t vocab_size, TokenStream& stream);

}  // namespace farthing::data

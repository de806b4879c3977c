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
// A line whose document is empty (an empty "text", "messages" or "response") is an
// error naming file:line: it would train on nothing, and is most often a broken export of the data.
// Errors name file:line and what was expected.
// Relies on: dataset_chat.h, packing.h, tokenizer.h, nlohmann/json.
// Tested by: tests/datasets/test_dataset_jsonl.cpp, test_dataset_chat.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "framework/data/dataset_options.h"
#include "framework/data/packing.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

// One line's document as the reader appends it: its tokens and loss mask (BOS/EOS not yet added)
// and what goes around it.
struct JsonlDocument {
  int64_t line = 0;  // 1-based line number in the file
  const char* kind = "";  // "messages", "prompt/response" or "text": the key that decided
  std::vector<int32_t> tokens;
  std::vector<uint8_t> loss_mask;
  DocumentEnds ends;
};

// Calls visit with every document of `path`, in file order, each id checked below vocab_size.
void for_each_jsonl_document(const std::filesystem::path& path, const Tokenizer& tokenizer,
                             const DatasetOptions& options, int64_t vocab_size,
                             const std::function<void(const JsonlDocument&)>& visit);

// Appends every document of `path` to `stream`, checking each id is below vocab_size.
void read_jsonl_documents(const std::filesystem::path& path, const Tokenizer& tokenizer, const DatasetOptions& options,
                          int64_t vocab_size, TokenStream& stream);

}  // namespace farthing::data

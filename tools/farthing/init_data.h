// init_data.h — what `farthing init --data FILE` reads of the data before it writes a recipe:
// the kind of data (the first JSONL line's keys: chat "messages", "prompt"/"response", "text";
// or a text or token file), every document's length as the trainer will pack it, and for chat
// or prompt/response data the settings the chat template needs:
//  - chat: data.chat_template names the template found (a built-in format's name, else "auto"
//    with where it is); add_bos false (the template opens each conversation itself, and
//    apply_chat_template adds no BOS at inference either; a template that prints BOS, as
//    Llama-3's, gets it from the template); add_eos false (each assistant turn's end-of-turn
//    token is trained and teaches the model to stop; an EOS after the conversation would be an
//    extra token no inference prompt has).
//  - prompt/response: add_eos true (the EOS after each response is trained: it teaches the model
//    to stop); add_bos as the tokenizer adds BOS when it encodes. The tokenizer's template, when
//    it has one, is named in data.chat_template for "messages" lines, with a comment saying that
//    these lines do not go through it (prompt and response are joined as they are).
//  - text and token files: BOS and EOS around each document, as before.
// Each choice carries the comment init writes beside it.
// Relies on: framework/data/dataset_documents.h, framework/data/dataset_chat.h,
// framework/data/document_packing.h.
// Tested by: tests/cli/test_init.sh.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/data/document_packing.h"
#include "framework/data/tokenizer.h"

namespace farthing::cli {

struct InitData {
  std::string kind;               // "chat", "prompt/response", "text", "text file", "token file"
  data::DocumentExtents documents;  // tokens per document, BOS/EOS included as chosen below, and its line
  std::string chat_template = "auto";
  std::string chat_template_comment;
  bool add_bos = true, add_eos = true;
  std::string add_bos_comment, add_eos_comment;
  data::Packing packing = data::Packing::kStream;  // data.packing: documents for chat and prompt/response data
  std::string packing_comment;
};

// Reads `path` (which must exist) with `tokenizer` (nullptr only for token files). Throws as the
// data readers do (file:line and what was expected), or when the chat template cannot be found.
InitData read_init_data(const std::filesystem::path& path, const data::Tokenizer* tokenizer, int64_t vocab_size);

}  // namespace farthing::cli

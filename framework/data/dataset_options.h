// dataset_options.h — how a training or eval file becomes packed sequences (the trainer maps its
// RunConfig onto this; framework/ knows nothing of recipes).
// Relies on: nothing. Tested by: tests/datasets/.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace farthing::data {

// Which reader a file goes through (the recipe's data.format). kAuto: a file starting with the
// FTOK magic -> tokens; *.jsonl -> jsonl; *.bin/*.tok without the magic is refused (it is not
// text); anything else -> text. dataset_format (dataset.h) resolves kAuto for a file.
enum class DataFormat : uint8_t { kAuto, kText, kJsonl, kTokens };
inline constexpr std::array<std::pair<DataFormat, std::string_view>, 4> kDataFormatNames{{
    {DataFormat::kAuto, "auto"}, {DataFormat::kText, "text"}, {DataFormat::kJsonl, "jsonl"}, {DataFormat::kTokens, "tokens"}}};

// How documents become sequences of seq_len (packing.h, document_packing.h).
// kDocuments: several documents share a sequence, each seeing only itself, positions restarting
// at its start; the last sequence padded. kStream: one stream cut llm.c-style, tokens attending
// across document ends (pre-training); the tail short of a sequence is dropped. kNone: one
// document a sequence, padded. kAuto: kDocuments when the file holds examples (prompt/response
// or chat messages), kStream for plain text and token files.
enum class Packing : uint8_t { kAuto, kDocuments, kStream, kNone };
inline constexpr std::array<std::pair<Packing, std::string_view>, 4> kPackingNames{{
    {Packing::kAuto, "auto"}, {Packing::kDocuments, "documents"}, {Packing::kStream, "stream"}, {Packing::kNone, "none"}}};

// A document longer than a sequence under kDocuments or kNone: kTruncate keeps its first
// sequence, kSplit continues it in the next sequences (positions restarting in each), kError
// refuses the data naming the document.
enum class LongDocuments : uint8_t { kTruncate, kSplit, kError };
inline constexpr std::array<std::pair<LongDocuments, std::string_view>, 3> kLongDocumentsNames{{
    {LongDocuments::kTruncate, "truncate"}, {LongDocuments::kSplit, "split"}, {LongDocuments::kError, "error"}}};

struct DatasetOptions {
  DataFormat format = DataFormat::kAuto;
  int64_t seq_len = 256;
  bool add_bos = true;          // BOS before each document when the tokenizer has one (bos_id >= 0)
  bool add_eos = true;          // EOS after each document when the tokenizer has one
  double eval_fraction = 0.05;  // share of packed sequences held out when no eval file is given
  Packing packing = Packing::kAuto;
  LongDocuments long_documents = LongDocuments::kSplit;
  // Chat template for JSONL "messages" lines: "auto" (the chat_template of tokenizer_config.json
  // beside tokenizer.json, or of the GGUF the tokenizer came from), a format name (llama3,
  // llama3_instruct, qwen2_5, smollm2, chatml), a path to a tokenizer_config.json or a Jinja file,
  // or the Jinja template itself (text with {% or {{). Templates the built-in formats do not
  // recognise run through the Jinja interpreter (dataset_chat.h; docs/chat_templates.md).
  std::string chat_template = "auto";
};

}  // namespace farthing::data

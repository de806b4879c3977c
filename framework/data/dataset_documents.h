// dataset_documents.h — a training file's documents one at a time, exactly as load_token_stream
// appends them (BOS/EOS included, with their loss flags), and what packing them into sequences
// of seq_len does to them. For `farthing data preview` (what the trainer sees, and the counts)
// and `farthing init` (sizing a recipe to the data), which need each document, not only the
// concatenated stream.
// A text file is one document; a token file is one document too (its boundaries are not
// recorded); a JSONL file has one per non-blank line (dataset_jsonl.h).
// The summary follows packing.h, document_packing.h and dataset.h: under stream, sequence i
// covers stream positions [i*L, i*L + L], consecutive sequences share one token and the tail
// short of a sequence is dropped; under documents and none, whole documents are placed and the
// rest padded; the last eval_fraction of the sequences (at least one when it is > 0) is held out.
// Relies on: dataset.h, dataset_jsonl.h, packing.h, document_packing.h. Tested by: tests/datasets/test_dataset_documents.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "framework/data/dataset_options.h"
#include "framework/data/document_packing.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

struct DataDocument {
  std::string where;               // "file:line" for a JSONL line, else the file
  int64_t line = 0;                // the JSONL line (1-based), 0 for a file that is one document
  std::string kind;                // "messages", "prompt/response", "text" (JSONL), "text file", "token file"
  std::vector<int32_t> tokens;     // as the stream holds them: BOS and EOS included
  std::vector<uint8_t> loss_mask;  // per token: 1 when predicting it counts in the loss
};

// Calls visit with every document of `path`, in file order. tokenizer may be nullptr only for
// token files. Errors as load_token_stream's.
void for_each_document(const std::filesystem::path& path, const DatasetOptions& options, const Tokenizer* tokenizer,
                       int64_t vocab_size, const std::function<void(const DataDocument&)>& visit);

struct PackingSummary {
  int64_t documents = 0;
  int64_t tokens = 0;                 // in the stream, BOS/EOS included
  int64_t longest_document = 0;       // tokens
  int64_t median_document = 0;        // tokens
  int64_t sequences = 0;              // whole sequences of seq_len
  int64_t train_sequences = 0, eval_sequences = 0;
  int64_t train_trained_tokens = 0;   // targets that carry loss in the training sequences
  int64_t eval_trained_tokens = 0;    // the same in the held-out sequences
  int64_t padding_tokens = 0;         // stream: 0 (back to back); documents / none: slots holding no document
  int64_t documents_cut = 0;          // stream: split by a sequence boundary; else longer than a sequence
  int64_t tokens_dropped = 0;         // stream: after the last whole sequence; else cut off by truncate
  int64_t documents_dropped = 0;      // stream: wholly or partly after the last whole sequence; else 0
};

// documents: each document's length in stream order, and its file and line for errors;
// loss_mask: the whole stream's mask (their sum of lengths). eval_fraction as
// DatasetOptions::eval_fraction (0 when an eval file is given: the file's sequences are all
// training ones). packing: stream, documents or none (resolved, not auto), as the trainer packs
// (document_packing.h for documents and none).
PackingSummary summarize_packing(const DocumentExtents& documents, std::span<const uint8_t> loss_mask,
                                 int64_t seq_len, double eval_fraction, Packing packing = Packing::kStream,
                                 LongDocuments long_documents = LongDocuments::kSplit);

}  // namespace farthing::data

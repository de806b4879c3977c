// dataset.h — training and eval files as packed sequences: the trainer's entry point to data.
//
// A file is read as plain text (the whole file is one document, encoded with
// parse_special = false, loss on every token), JSONL (dataset_jsonl.h: text, prompt/response
// or chat messages, each with its loss mask) or a token file (token_file.h, loss on every token,
// no BOS/EOS added: `farthing tokenize --bos/--eos` puts them in). Documents are packed as
// packing.h (stream) or document_packing.h (documents, none) describe, as options.packing says.
// Every id is checked against the model's vocab_size.
// Split: with no eval file, the LAST eval_fraction of the train file's packed sequences (at
// least one when eval_fraction > 0) is held out, before any shuffling, so the split is the same
// for every seed; eval_fraction = 0 leaves eval empty (size 0). Either half without a sequence,
// or without a single loss token, is an error naming the file and the fix.
// Relies on: dataset_jsonl.h, document_packing.h, packing.h, token_file.h, tokenizer.h.
// Tested by: tests/datasets/test_dataset_split.cpp, test_dataset_errors.cpp, test_dataset_shared.cpp,
// test_document_packing.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "framework/data/dataset_options.h"
#include "framework/data/document_packing.h"
#include "framework/data/packing.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

// The reader `format` picks for `path`: itself, or for kAuto what the magic and extension say
// (never kAuto).
DataFormat dataset_format(const std::filesystem::path& path, DataFormat format);

// Every document of one file, BOS/EOS added as options say. tokenizer may be nullptr only for
// token files.
TokenStream load_token_stream(const std::filesystem::path& path, const DatasetOptions& options,
                              const Tokenizer* tokenizer, int64_t vocab_size);

struct SplitData {
  PackedDataset train, eval;
  Packing packing = Packing::kStream;      // options.packing, kAuto resolved by the train file's data
  PackingCounts train_counts, eval_counts;  // eval_counts: of an eval file (zero when split off train)
};

// kAuto resolved for a stream: documents when it holds examples, else stream.
Packing resolved_packing(Packing packing, const TokenStream& stream);

// train: a file; eval: "" to hold out eval_fraction of train's sequences (its end), else a file
// packed the same way. tokenizer may be nullptr only for token files. vocab_size: the model's.
SplitData load_split_data(const std::filesystem::path& train, const std::filesystem::path& eval,
                          const DatasetOptions& options, const Tokenizer* tokenizer, int64_t vocab_size);

}  // namespace farthing::data

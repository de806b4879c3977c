// dataset.cpp — see dataset.h.
#include "framework/data/dataset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "framework/core/error.h"
#include "framework/data/dataset_jsonl.h"
#include "framework/data/token_file.h"

namespace farthing::data {

namespace fs = std::filesystem;

namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool starts_with_token_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string_view(magic, 4) == "FTOK";
}

// As an error message calls a file of each reader: "a JSONL file".
const char* format_name(DataFormat format) {
  switch (format) {
    case DataFormat::kText: return "text";
    case DataFormat::kJsonl: return "JSONL";
    case DataFormat::kTokens: return "token";
    case DataFormat::kAuto: break;
  }
  return "?";
}

void read_text_document(const fs::path& path, const Tokenizer& tokenizer, const DatasetOptions& options,
                        int64_t vocab_size, TokenStream& stream) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open text file ", path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  FARTHING_CHECK(!buffer.str().empty(), "text file ", path.string(),
                 " is empty: an empty document, nothing to train on; give it text, or point the recipe at another file");
  const std::vector<int32_t> ids = tokenizer.encode(buffer.str(), /*parse_special=*/false);
  check_token_ids(ids, vocab_size, path.string());
  const DocumentEnds ends{options.add_bos ? tokenizer.bos_id() : -1, true, options.add_eos ? tokenizer.eos_id() : -1,
                          true};
  if (ends.bos_id >= 0) check_token_ids({&ends.bos_id, 1}, vocab_size, path.string() + " (BOS)");
  if (ends.eos_id >= 0) check_token_ids({&ends.eos_id, 1}, vocab_size, path.string() + " (EOS)");
  append_document(stream, ids, {}, ends);
}

void read_token_document(const fs::path& path, int64_t vocab_size, TokenStream& stream) {
  const TokenFile file = read_token_file(path);
  for (size_t i = 0; i < file.ids.size(); ++i) {
    if (int64_t(file.ids[i]) >= vocab_size) [[unlikely]] {
      FARTHING_FAIL(path.string(), ": token ", i, " has id ", file.ids[i], ", not below the model's vocab_size ",
                    vocab_size, " (the file was written for a vocabulary of ", file.vocab_size,
                    "; was it tokenized with another model's tokenizer?)");
    }
  }
  stream.tokens.assign(file.ids.begin(), file.ids.end());
  stream.loss_mask.assign(file.ids.size(), uint8_t(1));
  stream.doc_starts = {0};
  stream.doc_lines = {0};
}

// Thrown when a file packs into no sequence at all.
[[noreturn]] void fail_too_short(const fs::path& path, const char* role, int64_t n_tokens, int64_t seq_len) {
  FARTHING_FAIL(role, " file ", path.string(), " has ", n_tokens, " tokens, fewer than the seq_len + 1 = ",
                seq_len + 1, " that one packed sequence needs; use a shorter seq_len or more data");
}

}  // namespace

DataFormat dataset_format(const fs::path& path, DataFormat format) {
  if (format != DataFormat::kAuto) return format;
  if (starts_with_token_magic(path)) return DataFormat::kTokens;
  const std::string ext = lowercase(path.extension().string());
  if (ext == ".jsonl") return DataFormat::kJsonl;
  FARTHING_CHECK(ext != ".bin" && ext != ".tok", path.string(),
                 " is named like a token file but does not start with the FTOK magic (llm.c or other binary "
                 "formats are not read); write it with `farthing tokenize`, or set the format to text");
  return DataFormat::kText;
}

TokenStream load_token_stream(const fs::path& path, const DatasetOptions& options, const Tokenizer* tokenizer,
                              int64_t vocab_size) {
  FARTHING_CHECK(!path.empty(), "no dataset file given");
  FARTHING_CHECK(fs::is_regular_file(path), "dataset file ", path.string(), " does not exist or is not a file");
  FARTHING_CHECK(std::ifstream(path, std::ios::binary).good(), "dataset file ", path.string(), " cannot be read");
  FARTHING_CHECK(vocab_size > 0, "vocab_size is ", vocab_size, " for ", path.string(), "; expected the model's (> 0)");
  const DataFormat format = dataset_format(path, options.format);
  FARTHING_CHECK(tokenizer != nullptr || format == DataFormat::kTokens, path.string(), " is a ", format_name(format),
                 " file and needs a tokenizer; none was given (only token files are read without one)");
  TokenStream stream;
  switch (format) {
    case DataFormat::kText: read_text_document(path, *tokenizer, options, vocab_size, stream); break;
    case DataFormat::kJsonl: read_jsonl_documents(path, *tokenizer, options, vocab_size, stream); break;
    case DataFormat::kTokens: read_token_document(path, vocab_size, stream); break;
    case DataFormat::kAuto: FARTHING_FAIL("dataset_format resolved ", path.string(), " to auto");
  }
  return stream;
}

Packing resolved_packing(Packing packing, const TokenStream& stream) {
  if (packing != Packing::kAuto) return packing;
  return stream.examples ? Packing::kDocuments : Packing::kStream;
}

namespace {

// One file's stream as sequences of seq_len, packed as `packing` says (never kAuto).
struct Packed {
  std::shared_ptr<const TokenStream> stream;
  std::shared_ptr<const SequenceLayout> layout;  // null: a stream cut llm.c-style
  int64_t sequences = 0;
  PackingCounts counts;
};

Packed pack(std::shared_ptr<const TokenStream> stream, const fs::path& path, const char* role, Packing packing,
            const DatasetOptions& options) {
  Packed p;
  p.stream = std::move(stream);
  const int64_t seq_len = options.seq_len;
  if (packing == Packing::kStream) {
    p.sequences = packed_sequence_count(p.stream->size(), seq_len);
    if (p.sequences == 0) fail_too_short(path, role, p.stream->size(), seq_len);
    p.counts.documents = int64_t(p.stream->doc_starts.size());
    p.counts.slots = p.sequences * seq_len;
    p.counts.tokens_dropped = p.stream->size() - 1 - p.sequences * seq_len;
  } else {
    p.layout = std::make_shared<const SequenceLayout>(
        pack_documents(*p.stream, seq_len, packing, options.long_documents, path.string(), p.counts));
    p.sequences = p.layout->sequences();
    FARTHING_CHECK(p.sequences > 0, role, " file ", path.string(), " holds no document");
  }
  return p;
}

}  // namespace

SplitData load_split_data(const fs::path& train, const fs::path& eval, const DatasetOptions& options,
                          const Tokenizer* tokenizer, int64_t vocab_size) {
  const int64_t seq_len = options.seq_len;
  FARTHING_CHECK(seq_len > 0, "seq_len is ", seq_len, "; expected a positive number of tokens");
  FARTHING_CHECK(options.eval_fraction >= 0.0 && options.eval_fraction < 1.0, "eval_fraction is ",
                 options.eval_fraction, "; expected a share in [0, 1) (0: no held-out eval set)");

  auto train_stream = std::make_shared<const TokenStream>(load_token_stream(train, options, tokenizer, vocab_size));
  SplitData split;
  split.packing = resolved_packing(options.packing, *train_stream);
  const Packed t = pack(train_stream, train, "train", split.packing, options);
  split.train_counts = t.counts;
  const int64_t n = t.sequences;

  if (eval.empty()) {
    int64_t n_eval = 0;
    if (options.eval_fraction > 0.0) {
      n_eval = std::max<int64_t>(1, std::llround(double(n) * options.eval_fraction));
      FARTHING_CHECK(n_eval < n, "train file ", train.string(), " (", train_stream->size(), " tokens) packs into ", n,
                     " sequence(s) of seq_len ", seq_len, "; eval_fraction ", options.eval_fraction, " holds out ",
                     n_eval, ", leaving none to train on; use a shorter seq_len, more data, a smaller "
                     "eval_fraction, or an eval file");
    }
    split.train = PackedDataset(t.stream, train.string(), seq_len, 0, n - n_eval, t.layout);
    if (n_eval > 0) split.eval = PackedDataset(t.stream, train.string(), seq_len, n - n_eval, n_eval, t.layout);
  } else {
    split.train = PackedDataset(t.stream, train.string(), seq_len, 0, n, t.layout);
    auto eval_stream = std::make_shared<const TokenStream>(load_token_stream(eval, options, tokenizer, vocab_size));
    const Packed e = pack(eval_stream, eval, "eval", split.packing, options);
    split.eval_counts = e.counts;
    split.eval = PackedDataset(e.stream, eval.string(), seq_len, 0, e.sequences, e.layout);
  }

  FARTHING_CHECK(split.train.loss_tokens() > 0, "train file ", train.string(),
                 ": no target carries loss in the training sequences (no assistant messages or responses?)");
  FARTHING_CHECK(split.eval.size() == 0 || split.eval.loss_tokens() > 0, "eval data from ", split.eval.source(),
                 ": no target carries loss in the ", split.eval.size(),
                 " eval sequence(s) (no assistant messages or responses?); give more eval data or another eval file");
  return split;
}

}  // namespace farthing::data

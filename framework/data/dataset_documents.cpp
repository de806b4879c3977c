// dataset_documents.cpp — see dataset_documents.h.
#include "framework/data/dataset_documents.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "framework/data/dataset_jsonl.h"
#include "framework/data/document_packing.h"
#include "framework/data/packing.h"

namespace farthing::data {

void for_each_document(const std::filesystem::path& path, const DatasetOptions& options, const Tokenizer* tokenizer,
                       int64_t vocab_size, const std::function<void(const DataDocument&)>& visit) {
  const bool jsonl = std::filesystem::is_regular_file(path) &&
                     dataset_format(path, options.format) == DataFormat::kJsonl && tokenizer != nullptr;
  if (!jsonl) {
    // One document per file: the reader's own stream, with all its checks.
    TokenStream stream = load_token_stream(path, options, tokenizer, vocab_size);
    const bool tokens = dataset_format(path, options.format) == DataFormat::kTokens;
    visit({path.string(), 0, tokens ? "token file" : "text file", std::move(stream.tokens), std::move(stream.loss_mask)});
    return;
  }
  FARTHING_CHECK(vocab_size > 0, "vocab_size is ", vocab_size, " for ", path.string(), "; expected the model's (> 0)");
  for_each_jsonl_document(path, *tokenizer, options, vocab_size, [&](const JsonlDocument& doc) {
    TokenStream one;
    append_document(one, doc.tokens, doc.loss_mask, doc.ends);
    visit({path.string() + ":" + std::to_string(doc.line), doc.line, doc.kind, std::move(one.tokens),
           std::move(one.loss_mask)});
  });
}

namespace {

// The held-out split, as load_split_data makes it.
int64_t eval_sequences_of(int64_t sequences, double eval_fraction) {
  if (sequences == 0 || eval_fraction <= 0.0) return 0;
  return std::min(sequences, std::max<int64_t>(1, std::llround(double(sequences) * eval_fraction)));
}

// Documents placed whole (documents / none): the layout pack_documents makes of them.
void summarize_documents(const DocumentExtents& documents, std::span<const uint8_t> loss_mask, int64_t seq_len,
                         double eval_fraction, Packing packing, LongDocuments long_documents, PackingSummary& s) {
  PackingCounts counts;
  const SequenceLayout layout = pack_documents(documents, seq_len, packing, long_documents, counts);
  s.sequences = layout.sequences();
  s.eval_sequences = eval_sequences_of(s.sequences, eval_fraction);
  s.train_sequences = s.sequences - s.eval_sequences;
  s.padding_tokens = counts.padding_slots;
  s.documents_cut = counts.documents_cut;
  s.tokens_dropped = counts.tokens_cut;
  for (int64_t q = 0; q < s.sequences; ++q) {
    for (int64_t p = layout.first_piece[size_t(q)]; p < layout.first_piece[size_t(q + 1)]; ++p) {
      const PackedPiece& piece = layout.pieces[size_t(p)];
      const auto trained = int64_t(std::count(loss_mask.begin() + piece.start + 1,
                                              loss_mask.begin() + piece.start + piece.slots + 1, uint8_t(1)));
      (q < s.train_sequences ? s.train_trained_tokens : s.eval_trained_tokens) += trained;
    }
  }
}

}  // namespace

PackingSummary summarize_packing(const DocumentExtents& documents, std::span<const uint8_t> loss_mask,
                                 int64_t seq_len, double eval_fraction, Packing packing,
                                 LongDocuments long_documents) {
  FARTHING_CHECK(seq_len > 0, "seq_len is ", seq_len, "; expected a positive number of tokens");
  const std::vector<int64_t>& document_lengths = documents.lengths;
  PackingSummary s;
  s.documents = int64_t(document_lengths.size());
  for (int64_t n : document_lengths) s.tokens += n;
  FARTHING_CHECK(int64_t(loss_mask.size()) == s.tokens, "a loss mask of ", loss_mask.size(),
                 " entries for documents of ", s.tokens, " tokens");
  if (s.documents > 0) {
    std::vector<int64_t> sorted(document_lengths.begin(), document_lengths.end());
    std::sort(sorted.begin(), sorted.end());
    s.longest_document = sorted.back();
    s.median_document = sorted[sorted.size() / 2];
  }
  FARTHING_CHECK(packing != Packing::kAuto, "summarize_packing takes a resolved packing, not auto");
  if (packing != Packing::kStream) {
    summarize_documents(documents, loss_mask, seq_len, eval_fraction, packing, long_documents, s);
    return s;
  }
  s.sequences = packed_sequence_count(s.tokens, seq_len);
  const int64_t used_end = s.sequences * seq_len;  // the last position any sequence reads (its final target)
  s.tokens_dropped = s.sequences > 0 ? s.tokens - 1 - used_end : s.tokens;
  s.eval_sequences = eval_sequences_of(s.sequences, eval_fraction);
  s.train_sequences = s.sequences - s.eval_sequences;
  // Sequence i's targets are positions i*L + 1 .. i*L + L.
  const int64_t train_end = s.train_sequences * seq_len;
  for (int64_t p = 1; p <= used_end; ++p) {
    if (loss_mask[size_t(p)]) ++(p <= train_end ? s.train_trained_tokens : s.eval_trained_tokens);
  }
  int64_t start = 0;
  for (int64_t n : document_lengths) {
    const int64_t end = start + n;  // the document is positions [start, end)
    if (n > 0 && end - 1 > used_end) {
      ++s.documents_dropped;
    } else if (n > 0) {
      // A boundary k*L with start < k*L < end starts a new sequence inside the document.
      const int64_t first_boundary = (start / seq_len + 1) * seq_len;
      if (first_boundary < end) ++s.documents_cut;
    }
    start = end;
  }
  return s;
}

}  // namespace farthing::data

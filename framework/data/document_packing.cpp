// document_packing.cpp — see document_packing.h.
#include "framework/data/document_packing.h"

#include <algorithm>

#include "framework/core/error.h"

namespace farthing::data {

namespace {

std::string where(const DocumentExtents& documents, size_t d) {
  const int64_t line = d < documents.lines.size() ? documents.lines[d] : 0;
  return line > 0 ? documents.source + ":" + std::to_string(line) : documents.source;
}

}  // namespace

SequenceLayout pack_documents(const DocumentExtents& documents, int64_t seq_len, Packing packing,
                              LongDocuments long_documents, PackingCounts& counts) {
  FARTHING_CHECK(seq_len > 0, "seq_len is ", seq_len, "; expected a positive number of tokens");
  FARTHING_CHECK(packing == Packing::kDocuments || packing == Packing::kNone,
                 "pack_documents packs documents or one per sequence");
  SequenceLayout layout;
  int64_t used = 0;  // slots filled in the open sequence; 0: none is open
  auto close_sequence = [&] {
    if (used == 0) return;
    layout.first_piece.push_back(int64_t(layout.pieces.size()));
    counts.padding_slots += seq_len - used;
    used = 0;
  };
  auto place = [&](PackedPiece piece) {
    if (packing == Packing::kNone || used + piece.slots > seq_len) close_sequence();
    layout.pieces.push_back(piece);
    used += piece.slots;
  };
  int64_t start = 0;
  for (size_t d = 0; d < documents.lengths.size(); start += documents.lengths[d], ++d) {
    const int64_t n = documents.lengths[d], slots = n - 1;
    ++counts.documents;
    FARTHING_CHECK(slots > 0, where(documents, d), ": a document of ", n,
                   " token(s) has nothing to predict under data.packing ", packing == Packing::kNone ? "none" : "documents",
                   "; expected at least 2 tokens (give it text, or set data.add_bos / data.add_eos)");
    if (slots <= seq_len) {
      place({start, slots});
      continue;
    }
    ++counts.documents_cut;
    switch (long_documents) {
      case LongDocuments::kError:
        FARTHING_FAIL(where(documents, d), ": a document of ", n, " tokens is longer than a sequence (data.seq_len ",
                      seq_len, ": ", seq_len + 1, " tokens with the last target) and data.long_documents is error; "
                      "raise data.seq_len, or set data.long_documents to truncate or split");
      case LongDocuments::kTruncate:
        counts.tokens_cut += slots - seq_len;
        place({start, seq_len});
        break;
      case LongDocuments::kSplit:
        for (int64_t first = 0; first < slots; first += seq_len) place({start + first, std::min(seq_len, slots - first)});
        break;
    }
  }
  close_sequence();
  counts.slots = layout.sequences() * seq_len;
  return layout;
}

SequenceLayout pack_documents(const TokenStream& stream, int64_t seq_len, Packing packing, LongDocuments long_documents,
                              const std::string& source, PackingCounts& counts) {
  // The stream's documents lie back to back from position 0 (append_document), so their
  // extents place them where the stream holds them.
  FARTHING_CHECK(stream.doc_starts.empty() || stream.doc_starts.front() == 0, source,
                 ": the stream's first document starts at ", stream.doc_starts.front(), ", not 0");
  DocumentExtents documents{source, {}, stream.doc_lines};
  documents.lengths.reserve(stream.doc_starts.size());
  for (size_t d = 0; d < stream.doc_starts.size(); ++d) documents.lengths.push_back(stream.document_end(d) - stream.doc_starts[d]);
  return pack_documents(documents, seq_len, packing, long_documents, counts);
}

int64_t packed_sequences(const DocumentExtents& documents, int64_t seq_len, Packing packing,
                         LongDocuments long_documents) {
  FARTHING_CHECK(packing != Packing::kAuto, "packed_sequences takes a resolved packing, not auto");
  if (packing == Packing::kStream) {
    int64_t tokens = 0;
    for (int64_t n : documents.lengths) tokens += n;
    return packed_sequence_count(tokens, seq_len);
  }
  PackingCounts counts;
  return pack_documents(documents, seq_len, packing, long_documents, counts).sequences();
}

}  // namespace farthing::data

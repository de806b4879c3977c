// document_packing.h — documents placed into sequences of seq_len whole, each kept apart
// (data.packing documents or none), instead of one stream cut llm.c-style (packing.h).
//
// A document of n tokens fills n - 1 slots of a sequence: its tokens 0..n-2 are inputs, each
// predicting the next (tokens 1..n-1), and its last token predicts nothing. So a document alone
// at positions 0..n-2 and the same document packed after others give the same inputs and
// targets, and the model (Transformer::set_document_starts) keeps it from seeing the others.
// documents: in file order, each document goes into the current sequence when it fits in what is
// left, else a new sequence starts and the rest of the current one is padding. none: a
// sequence per document. Padding slots take token 0 and target -100 and form a document of
// their own, so they carry no loss and no real token sees them. No document is dropped: the last
// sequence is padded.
// A document longer than a sequence (n - 1 > seq_len), as LongDocuments says: truncate keeps its
// first seq_len slots; split cuts it into pieces of seq_len slots (consecutive pieces share one
// token, as stream sequences do), each piece a document of its own, so positions restart.
// Relies on: packing.h, dataset_options.h. Tested by: tests/datasets/test_document_packing.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/dataset_options.h"
#include "framework/data/packing.h"

namespace farthing::data {

// Stream positions [start, start + slots]: inputs start .. start + slots - 1, targets one on.
struct PackedPiece {
  int64_t start = 0;
  int64_t slots = 0;
};

// Which pieces each sequence holds, in order from its first slot; the rest is padding.
struct SequenceLayout {
  std::vector<PackedPiece> pieces;
  std::vector<int64_t> first_piece{0};  // sequence i holds pieces [first_piece[i], first_piece[i + 1])
  int64_t sequences() const { return int64_t(first_piece.size()) - 1; }
};

// What packing did, for the run's summary line.
struct PackingCounts {
  int64_t documents = 0;
  int64_t documents_cut = 0;   // longer than a sequence: truncated or split
  int64_t tokens_cut = 0;      // dropped by truncation
  int64_t slots = 0;           // sequences x seq_len
  int64_t padding_slots = 0;   // slots that hold no document
  int64_t tokens_dropped = 0;  // stream: the tail short of a whole sequence
};

// A file's documents known by their lengths alone, back to back from stream position 0: what
// `farthing init` and `farthing data preview` pack without holding a stream, so that they count
// the sequences the trainer will make with the trainer's own rule.
struct DocumentExtents {
  std::string source;            // the file, as errors name it
  std::vector<int64_t> lengths;  // tokens of each document (BOS/EOS included), in file order
  std::vector<int64_t> lines;    // each document's 1-based line in source (0 or absent: none)
};

// packing: kDocuments or kNone. `source` names the file in errors ("file:line" where the
// document has a line). Throws for a document of one token (nothing to predict) and, under
// LongDocuments::kError, for one longer than a sequence.
SequenceLayout pack_documents(const TokenStream& stream, int64_t seq_len, Packing packing, LongDocuments long_documents,
                              const std::string& source, PackingCounts& counts);
SequenceLayout pack_documents(const DocumentExtents& documents, int64_t seq_len, Packing packing,
                              LongDocuments long_documents, PackingCounts& counts);

// The sequences of seq_len these documents become under `packing` (stream, documents or none;
// not auto), as load_split_data packs them: packed_sequence_count for a stream, else
// pack_documents' layout. Throws as pack_documents does.
int64_t packed_sequences(const DocumentExtents& documents, int64_t seq_len, Packing packing,
                         LongDocuments long_documents);

}  // namespace farthing::data

// packing.h — documents concatenated into one stream of (token, loss mask), cut into sequences
// llm.c-style: sequence i is stream positions [i*L, i*L + L + 1) for L = seq_len; its inputs are
// the first L tokens and its targets the next token of each position (positions 1..L), -100 where
// that target token's mask is 0. Consecutive sequences overlap by one token; the tail that does
// not fill a sequence is dropped.
// NOTE: the stream is stored once (int32 ids + one byte of mask per token, 5 bytes a token) and
// shared by the train and eval halves of a split, which are ranges of sequence indices.
// Relies on: core/error.h. Tested by: tests/datasets/test_packing.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace farthing::data {

inline constexpr int32_t kIgnoreTarget = -100;  // a target that carries no loss

// The documents of one file, one after another.
struct TokenStream {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> loss_mask;  // 1: predicting this token counts in the loss
  // Where each document starts in the stream, and its 1-based line in the file (0: the file is
  // one document). A token file's documents are not recorded: it is one.
  std::vector<int64_t> doc_starts;
  std::vector<int64_t> doc_lines;
  bool examples = false;  // some document is an example (prompt/response or chat messages)
  int64_t size() const { return int64_t(tokens.size()); }
  int64_t document_end(size_t d) const { return d + 1 < doc_starts.size() ? doc_starts[d + 1] : size(); }
};

// What goes around a document: BOS/EOS ids (-1: none) and whether predicting each is trained on.
struct DocumentEnds {
  int32_t bos_id = -1;
  bool bos_in_loss = true;
  int32_t eos_id = -1;
  bool eos_in_loss = true;
};

// Appends [BOS] tokens [EOS] as one document (from `line` of its file, 0: the whole file);
// loss_mask has one entry per token (empty: all 1).
void append_document(TokenStream& stream, std::span<const int32_t> tokens, std::span<const uint8_t> loss_mask,
                     const DocumentEnds& ends, int64_t line = 0);

// Throws naming `where`, the position (offset by first_position) and the id when an id is
// negative or not below vocab_size.
void check_token_ids(std::span<const int32_t> ids, int64_t vocab_size, const std::string& where,
                     int64_t first_position = 0);

// Number of whole sequences of seq_len a stream of n_tokens packs into: (n_tokens - 1) / seq_len.
int64_t packed_sequence_count(int64_t n_tokens, int64_t seq_len);

struct SequenceLayout;  // document_packing.h

// Packed sequences [first, first + count) of a shared stream: cut llm.c-style (no layout), or
// whole documents kept apart as a SequenceLayout places them (document_packing.h).
class PackedDataset {
 public:
  PackedDataset() = default;  // empty (size 0): e.g. no eval set
  PackedDataset(std::shared_ptr<const TokenStream> stream, std::string source, int64_t seq_len, int64_t first,
                int64_t count, std::shared_ptr<const SequenceLayout> layout = nullptr);

  int64_t size() const { return count_; }           // number of sequences
  int64_t seq_len() const { return seq_len_; }
  int64_t loss_tokens() const { return loss_tokens_; }  // targets that count (!= -100) over all sequences
  // Whether sequences hold documents kept apart, whose starts sequence() writes.
  bool has_documents() const { return layout_ != nullptr; }
  // Writes seq_len inputs and seq_len targets of sequence `index` (0 <= index < size()), and
  // where doc_start is not null, each slot's document start within the sequence (all 0 for a
  // stream: one document).
  void sequence(int64_t index, int32_t* tokens, int32_t* targets, int32_t* doc_start = nullptr) const;
  const std::string& source() const { return source_; }  // file it came from, for messages

 private:
  std::shared_ptr<const TokenStream> stream_;
  std::shared_ptr<const SequenceLayout> layout_;
  std::string source_;
  int64_t seq_len_ = 0, first_ = 0, count_ = 0, loss_tokens_ = 0;
};

}  // namespace farthing::data

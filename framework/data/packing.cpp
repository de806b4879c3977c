// packing.cpp — see packing.h.
#include "framework/data/packing.h"

#include <algorithm>
#include <utility>

#include "framework/core/error.h"
#include "framework/data/document_packing.h"

namespace farthing::data {

void append_document(TokenStream& stream, std::span<const int32_t> tokens, std::span<const uint8_t> loss_mask,
                     const DocumentEnds& ends, int64_t line) {
  FARTHING_CHECK(loss_mask.empty() || loss_mask.size() == tokens.size(), "a document of ", tokens.size(),
                 " tokens has ", loss_mask.size(), " loss-mask entries; expected one per token");
  const size_t extra = (ends.bos_id >= 0 ? 1 : 0) + (ends.eos_id >= 0 ? 1 : 0);
  stream.doc_starts.push_back(stream.size());
  stream.doc_lines.push_back(line);
  stream.tokens.reserve(stream.tokens.size() + tokens.size() + extra);
  stream.loss_mask.reserve(stream.loss_mask.size() + tokens.size() + extra);
  if (ends.bos_id >= 0) {
    stream.tokens.push_back(ends.bos_id);
    stream.loss_mask.push_back(ends.bos_in_loss ? 1 : 0);
  }
  stream.tokens.insert(stream.tokens.end(), tokens.begin(), tokens.end());
  if (loss_mask.empty()) {
    stream.loss_mask.insert(stream.loss_mask.end(), tokens.size(), uint8_t(1));
  } else {
    for (uint8_t m : loss_mask) stream.loss_mask.push_back(m ? 1 : 0);
  }
  if (ends.eos_id >= 0) {
    stream.tokens.push_back(ends.eos_id);
    stream.loss_mask.push_back(ends.eos_in_loss ? 1 : 0);
  }
}

void check_token_ids(std::span<const int32_t> ids, int64_t vocab_size, const std::string& where,
                     int64_t first_position) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) [[unlikely]] {
      FARTHING_FAIL(where, ": token ", first_position + int64_t(i), " has id ", ids[i],
                    ", not below the model's vocab_size ", vocab_size,
                    " (was the data tokenized with another model's tokenizer?)");
    }
  }
}

int64_t packed_sequence_count(int64_t n_tokens, int64_t seq_len) {
  FARTHING_CHECK(seq_len > 0, "seq_len is ", seq_len, "; expected a positive number of tokens");
  return n_tokens <= seq_len ? 0 : (n_tokens - 1) / seq_len;
}

PackedDataset::PackedDataset(std::shared_ptr<const TokenStream> stream, std::string source, int64_t seq_len,
                             int64_t first, int64_t count, std::shared_ptr<const SequenceLayout> layout)
    : stream_(std::move(stream)),
      layout_(std::move(layout)),
      source_(std::move(source)),
      seq_len_(seq_len),
      first_(first),
      count_(count) {
  FARTHING_CHECK(stream_ != nullptr, source_, ": no token stream");
  const int64_t available = layout_ ? layout_->sequences() : packed_sequence_count(stream_->size(), seq_len);
  FARTHING_CHECK(first >= 0 && count >= 0 && first + count <= available, source_, ": sequences [", first, ", ",
                 first + count, ") of seq_len ", seq_len, " do not fit in the ", available, " packed from ",
                 stream_->size(), " tokens");
  if (count == 0) return;
  const uint8_t* mask = stream_->loss_mask.data();
  if (layout_) {
    for (int64_t p = layout_->first_piece[size_t(first)]; p < layout_->first_piece[size_t(first + count)]; ++p) {
      const PackedPiece& piece = layout_->pieces[size_t(p)];
      loss_tokens_ += int64_t(std::count(mask + piece.start + 1, mask + piece.start + piece.slots + 1, uint8_t(1)));
    }
    return;
  }
  // Targets of sequences [first, first + count) are the contiguous positions
  // [first*L + 1, (first + count)*L + 1).
  loss_tokens_ = int64_t(std::count(mask + first * seq_len + 1, mask + (first + count) * seq_len + 1, uint8_t(1)));
}

void PackedDataset::sequence(int64_t index, int32_t* tokens, int32_t* targets, int32_t* doc_start) const {
  FARTHING_CHECK(index >= 0 && index < count_, source_, ": sequence ", index, " requested; the dataset has ", count_,
                 " sequences");
  const int32_t* ids = stream_->tokens.data();
  const uint8_t* mask = stream_->loss_mask.data();
  // Slots [at, at + n) from stream positions [start, start + n], one document starting at `at`.
  auto fill = [&](int64_t at, int64_t start, int64_t n) {
    std::copy(ids + start, ids + start + n, tokens + at);
    for (int64_t t = 0; t < n; ++t) targets[at + t] = mask[start + t + 1] ? ids[start + t + 1] : kIgnoreTarget;
    if (doc_start) std::fill(doc_start + at, doc_start + at + n, int32_t(at));
  };
  if (!layout_) return fill(0, (first_ + index) * seq_len_, seq_len_);
  int64_t at = 0;
  const int64_t seq = first_ + index;
  for (int64_t p = layout_->first_piece[size_t(seq)]; p < layout_->first_piece[size_t(seq + 1)]; ++p) {
    const PackedPiece& piece = layout_->pieces[size_t(p)];
    fill(at, piece.start, piece.slots);
    at += piece.slots;
  }
  // Padding: token 0, no loss, a document of its own that no real token sees.
  std::fill(tokens + at, tokens + seq_len_, 0);
  std::fill(targets + at, targets + seq_len_, kIgnoreTarget);
  if (doc_start) std::fill(doc_start + at, doc_start + seq_len_, int32_t(at));
}

}  // namespace farthing::data

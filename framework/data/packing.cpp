// packing.cpp — see packing.h.
#include "framework/data/packing.h"

#include <algorithm>
#include <utility>

#include "framework/core/error.h"

namespace farthing::data {

void append_document(TokenStream& stream, std::span<const int32_t> tokens, std::span<const uint8_t> loss_mask,
                     const DocumentEnds& ends) {
  FARTHING_CHECK(loss_mask.empty() || loss_mask.size() == tokens.size(), "a document of ", tokens.size(),
                 " tokens has ", loss_mask.size(), " loss-mask entries; expected one per token");
  const size_t extra = (ends.bos_id >= 0 ? 1 : 0) + (ends.eos_id >= 0 ? 1 : 0);
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
                             int64_t first, int64_t count)
    : stream_(std::move(stream)), source_(std::move(source)), seq_len_(seq_len), first_(first), count_(count) {
  FARTHING_CHECK(stream_ != nullptr, source_, ": no token stream");
  FARTHING_CHECK(first >= 0 && count >= 0 && first + count <= packed_sequence_count(stream_->size(), seq_len),
                 source_, ": sequences [", first, ", ", first + count, ") of seq_len ", seq_len, " do not fit in ",
                 stream_->size(), " tokens");
  // Targets of sequences [first, first + count) are the contiguous positions
  // [first*L + 1, (first + count)*L + 1).
  if (count > 0) {
    const uint8_t* mask = stream_->loss_mask.data();
    loss_tokens_ = int64_t(std::count(mask + first * seq_len + 1, mask + (first + count) * seq_len + 1, uint8_t(1)));
  }
}

void PackedDataset::sequence(int64_t index, int32_t* tokens, int32_t* targets) const {
  FARTHING_CHECK(index >= 0 && index < count_, source_, ": sequence ", index, " requested; the dataset has ", count_,
                 " sequences");
  const int64_t start = (first_ + index) * seq_len_;
  const int32_t* ids = stream_->tokens.data() + start;
  const uint8_t* mask = stream_->loss_mask.data() + start;
  std::copy(ids, ids + seq_len_, tokens);
  for (int64_t t = 0; t < seq_len_; ++t) targets[t] = mask[t + 1] ? ids[t + 1] : kIgnoreTarget;
}

}  // namespace farthing::data

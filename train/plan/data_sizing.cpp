// data_sizing.cpp — see data_sizing.h.
#include "train/plan/data_sizing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "framework/core/error.h"

namespace farthing::train {

namespace {

constexpr int64_t kMinSeqLen = 32;
constexpr int64_t kMinSequences = 8;
constexpr int64_t kMaxStepSequences = 8;
constexpr int64_t kMaxSteps = 100000;

int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

DataSizing size_to_data(const data::DocumentExtents& documents, int64_t seq_len_cap, data::Packing packing,
                        data::LongDocuments long_documents) {
  const std::vector<int64_t>& document_lengths = documents.lengths;
  FARTHING_CHECK(!document_lengths.empty(), "sizing to data with no document");
  FARTHING_CHECK(seq_len_cap >= 1, "sizing to data with a seq_len cap of ", seq_len_cap);
  std::vector<int64_t> sorted(document_lengths.begin(), document_lengths.end());
  std::sort(sorted.begin(), sorted.end());
  int64_t tokens = 0;
  for (int64_t n : sorted) tokens += n;
  const int64_t p90 = sorted[std::min(sorted.size() - 1, size_t(double(sorted.size()) * 0.9))];

  DataSizing s;
  const int64_t floor = std::min(kMinSeqLen, seq_len_cap);
  s.seq_len = std::clamp(next_power_of_two(p90), floor, seq_len_cap);
  auto sequences_at = [&](int64_t seq_len) {
    return data::packed_sequences(documents, seq_len, packing, long_documents);
  };
  while (s.seq_len / 2 >= floor && sequences_at(s.seq_len) < kMinSequences) s.seq_len /= 2;
  s.sequences = sequences_at(s.seq_len);

  if (s.sequences >= 20) {
    s.eval_fraction = 0.05;
  } else if (s.sequences >= 4) {
    // Rounded up in the 4th digit, so that llround(sequences * eval_fraction) is exactly 1.
    s.eval_fraction = std::ceil(10000.0 / double(s.sequences)) / 10000.0;
  }
  s.eval_sequences = s.eval_fraction > 0.0 ? std::max<int64_t>(1, std::llround(double(s.sequences) * s.eval_fraction)) : 0;
  s.train_sequences = s.sequences - s.eval_sequences;
  s.step_sequences = std::clamp<int64_t>(s.train_sequences / 4, 1, kMaxStepSequences);

  const double train_tokens = double(s.train_sequences) * double(s.seq_len);
  const double target_epochs = train_tokens < 10e6 ? 3.0 : 1.0;
  s.steps = s.train_sequences > 0
                ? std::clamp<int64_t>(int64_t(std::ceil(target_epochs * double(s.train_sequences) / double(s.step_sequences))),
                                      1, kMaxSteps)
                : 1;
  s.epochs = s.train_sequences > 0 ? double(s.steps * s.step_sequences) / double(s.train_sequences) : 0.0;
  char why[256];
  std::snprintf(why, sizeof why, "%zu document(s), %lld tokens, 90%% of documents within %lld tokens (longest %lld)",
                sorted.size(), (long long)tokens, (long long)p90, (long long)sorted.back());
  s.why = why;
  return s;
}

}  // namespace farthing::train

// sampler.h — deterministic, resumable order over n sequences across epochs.
//
// The k-th draw (k = 0, 1, 2, ... counted over all epochs) is sequence at(k). Epoch e = k / n
// is a permutation keyed by (seed, e) when shuffling, else the identity. A run's data position
// is just k, so saving k and restoring it resumes the exact order.
// NOTE: the permutation is Fisher–Yates driven by SplitMix64 seeded from (seed, epoch) with
// unbiased (rejection-sampled) integer draws in pure uint64 arithmetic, so the order is the
// same on every platform and compiler; no std::random_device, no std:: distributions (their
// algorithms differ between standard libraries).
// at() caches the current epoch's permutation (8 bytes per sequence), so sequential draws are
// O(1); the cache makes a sampler unsafe to share between threads without a lock.
// Relies on: core/error.h. Tested by: tests/datasets/test_sampler.cpp.
#pragma once

#include <cstdint>
#include <vector>

namespace farthing::data {

class EpochSampler {
 public:
  EpochSampler(int64_t n, uint64_t seed, bool shuffle);

  int64_t at(int64_t k) const;        // sequence index of draw k (k >= 0)
  int64_t epoch_of(int64_t k) const;  // k / n
  int64_t size() const { return n_; }  // sequences per epoch

  // The permutation of epoch `epoch` (identity when not shuffling); what at() caches.
  std::vector<int64_t> epoch_order(int64_t epoch) const;

 private:
  int64_t n_;
  uint64_t seed_;
  bool shuffle_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_order_;
};

}  // namespace farthing::data

// sampler.cpp — see sampler.h.
#include "framework/data/sampler.h"

#include <numeric>
#include <utility>

#include "framework/core/error.h"

namespace farthing::data {

namespace {

// SplitMix64's output function (Steele, Lea & Flood): a bijective 64-bit mixer.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, bound), bound > 0, without modulo bias: reject the lowest 2^64 mod bound values.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // == 2^64 mod bound
    for (;;) {
      const uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  uint64_t state_;
};

// Epochs with the same seed must not share a stream, nor seeds with the same epoch: mix the
// seed, then fold in the mixed epoch (two independent mixes, so (s, e) and (e, s) differ).
uint64_t epoch_key(uint64_t seed, int64_t epoch) {
  return mix64(mix64(seed) ^ mix64(uint64_t(epoch) + 0x632BE59BD9B4E019ull));
}

}  // namespace

EpochSampler::EpochSampler(int64_t n, uint64_t seed, bool shuffle) : n_(n), seed_(seed), shuffle_(shuffle) {
  FARTHING_CHECK(n > 0, "a sampler over ", n, " sequences; expected at least one (is the dataset empty?)");
}

int64_t EpochSampler::epoch_of(int64_t k) const {
  FARTHING_CHECK(k >= 0, "draw ", k, " requested; the data position is a count from 0");
  return k / n_;
}

std::vector<int64_t> EpochSampler::epoch_order(int64_t epoch) const {
  FARTHING_CHECK(epoch >= 0, "epoch ", epoch, " requested; epochs count from 0");
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!shuffle_) return order;
  SplitMix64 rng(epoch_key(seed_, epoch));
  for (int64_t i = n_ - 1; i > 0; --i) {  // Fisher–Yates: swap i with a uniform j in [0, i]
    const int64_t j = int64_t(rng.below(uint64_t(i) + 1));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

int64_t EpochSampler::at(int64_t k) const {
  const int64_t epoch = epoch_of(k);
  if (!shuffle_) return k % n_;
  if (epoch != cached_epoch_) {
    cached_order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  return cached_order_[size_t(k % n_)];
}

}  // namespace farthing::data

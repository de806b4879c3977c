// host_block_cache.cpp — see host_block_cache.h.
#include "framework/backend/host_block_cache.h"

#include <cstdlib>

namespace farthing {

namespace {
constexpr size_t kAlignment = 64;  // one cache line, and whole AVX-512 vectors
}

HostBlockCache::HostBlockCache(size_t capacity_bytes, size_t min_block_bytes)
    : capacity_(capacity_bytes), min_block_(min_block_bytes) {}

HostBlockCache::~HostBlockCache() {
  for (const auto& [bytes, data] : kept_) std::free(data);
}

void* HostBlockCache::allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < min_block_) return std::aligned_alloc(kAlignment, rounded);
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = kept_.find(rounded); it != kept_.end()) {
    void* data = it->second;
    kept_.erase(it);
    kept_bytes_ -= rounded;
    return data;
  }
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data != nullptr) large_[data] = rounded;
  return data;
}

void HostBlockCache::free(void* data) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = large_.find(data);
  if (it == large_.end()) {  // a small block
    std::free(data);
    return;
  }
  const size_t bytes = it->second;
  if (bytes > capacity_) {
    large_.erase(it);
    std::free(data);
    return;
  }
  // Make room by letting the largest kept blocks go: they are the ones least likely to recur.
  while (kept_bytes_ + bytes > capacity_) {
    const auto largest = std::prev(kept_.end());
    kept_bytes_ -= largest->first;
    large_.erase(largest->second);
    std::free(largest->second);
    kept_.erase(largest);
  }
  kept_.emplace(bytes, data);
  kept_bytes_ += bytes;
}

size_t HostBlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_bytes_;
}

}  // namespace farthing

// host_block_cache.h — host allocations, with large freed blocks kept for reuse.
//
// The parameter store's units come and go twice a training step (fp32 parameters in forward and
// backward, gradient accumulators), each a block of the same size as last step's. Fresh pages
// from the OS cost a page fault apiece when first touched (~7% of a GPT-2 124M step on 2 cores),
// so freed blocks of at least min_block_bytes are kept, up to capacity_bytes in all, and handed
// out again for an allocation of exactly their size. The memory tracker counts Buffers, not
// this cache: a kept block is free memory to the tracker and to `farthing plan`, but stays in the
// process's RSS until reused or evicted.
// Relies on: nothing. Tested by: tests/backend/test_host_block_cache.cpp.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

namespace farthing {

class HostBlockCache {
 public:
  HostBlockCache(size_t capacity_bytes, size_t min_block_bytes);
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  // 64-byte aligned; nullptr when the system is out of memory.
  void* allocate(size_t bytes);
  void free(void* data);
  size_t cached_bytes() const;

 private:
  const size_t capacity_, min_block_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> large_;  // every large block handed out, by its rounded size
  std::multimap<size_t, void*> kept_;        // freed large blocks, by size
  size_t kept_bytes_ = 0;
};

}  // namespace farthing

// test_host_block_cache.cpp — framework/backend/host_block_cache.h: a freed large block comes back
// for an allocation of its size; small blocks and blocks past the capacity are not kept; the
// largest kept blocks make room for new ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "framework/backend/host_block_cache.h"

namespace farthing {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

TEST(HostBlockCache, ReusesAFreedLargeBlockOfTheSameSize) {
  HostBlockCache cache(8 * kMiB, kMiB);
  void* a = cache.allocate(2 * kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 2 * kMiB);
  cache.free(a);
  EXPECT_EQ(cache.cached_bytes(), 2 * kMiB);
  void* other = cache.allocate(3 * kMiB);  // another size: a fresh block
  EXPECT_NE(other, a);
  void* again = cache.allocate(2 * kMiB - 10);  // rounds up to the same 64-byte multiple
  EXPECT_EQ(again, a);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.free(again);
  cache.free(other);
  EXPECT_EQ(cache.cached_bytes(), 5 * kMiB);
}

TEST(HostBlockCache, KeepsNoSmallBlocksAndNothingPastTheCapacity) {
  HostBlockCache cache(4 * kMiB, kMiB);
  cache.free(cache.allocate(1000));
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.free(cache.allocate(5 * kMiB));  // larger than the whole capacity
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(HostBlockCache, TheLargestKeptBlocksMakeRoom) {
  HostBlockCache cache(4 * kMiB, kMiB);
  void* big = cache.allocate(3 * kMiB);
  void* small = cache.allocate(kMiB);
  void* next = cache.allocate(2 * kMiB);
  cache.free(big);
  cache.free(small);
  EXPECT_EQ(cache.cached_bytes(), 4 * kMiB);
  cache.free(next);  // 2 MiB more: the 3 MiB block goes, the 1 MiB one stays
  EXPECT_EQ(cache.cached_bytes(), 3 * kMiB);
  EXPECT_EQ(cache.allocate(kMiB), small);
  EXPECT_EQ(cache.allocate(2 * kMiB), next);
  cache.free(small);  // handed out again above: the caller's to free (the sanitizer build checks leaks)
  cache.free(next);
}

}  // namespace
}  // namespace farthing

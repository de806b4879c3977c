// checked_math.h — size arithmetic for readers of untrusted files: element counts, byte sizes
// and offsets a file declares are combined here, never with bare * and +, so an overflow is an
// Error naming what was being computed instead of a wrapped size that passes a bounds check.
//
//   const uint64_t bytes = checked_mul(n, 4, "the token ids of ", file);
//   check_range(offset, bytes, file_size, "tensor '", name, "' in ", file);
//
// The trailing arguments are message parts (as for FARTHING_CHECK) naming the file and the field.
// Relies on: error.h. Tested by: tests/ckpt/test_checked_sizes.cpp and the readers' bad-file tests.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "framework/core/error.h"

namespace farthing {

// a * b; throws "<what>: a × b overflows 64 bits" when it does.
template <class... What>
uint64_t checked_mul(uint64_t a, uint64_t b, const What&... what) {
  uint64_t r = 0;
  FARTHING_CHECK(!__builtin_mul_overflow(a, b, &r), what..., ": ", a, " * ", b, " overflows 64 bits");
  return r;
}

// a + b; throws when it overflows.
template <class... What>
uint64_t checked_add(uint64_t a, uint64_t b, const What&... what) {
  uint64_t r = 0;
  FARTHING_CHECK(!__builtin_add_overflow(a, b, &r), what..., ": ", a, " + ", b, " overflows 64 bits");
  return r;
}

// The product of non-negative signed factors (element counts of declared shapes); throws when a
// factor is negative or the product exceeds `limit`.
template <class... What>
int64_t checked_product(std::initializer_list<int64_t> factors, int64_t limit, const What&... what) {
  int64_t r = 1;
  for (int64_t f : factors) {
    FARTHING_CHECK(f >= 0, what..., ": negative size ", f);
    FARTHING_CHECK(!__builtin_mul_overflow(r, f, &r) && r <= limit, what..., ": the sizes multiply past ", limit);
  }
  return r;
}

// [offset, offset + bytes) lies inside [0, size); throws (naming the range and the size) otherwise.
template <class... What>
void check_range(uint64_t offset, uint64_t bytes, uint64_t size, const What&... what) {
  uint64_t end = 0;
  FARTHING_CHECK(!__builtin_add_overflow(offset, bytes, &end) && end <= size, what..., " needs bytes [", offset,
                 ", ", offset, " + ", bytes, ") but only ", size, " bytes are there");
}

// Recursion guard for nested structures (JSON sequences, GGUF arrays): throws when depth passes max.
template <class... What>
void check_depth(int depth, int max_depth, const What&... what) {
  FARTHING_CHECK(depth <= max_depth, what..., " nests deeper than ", max_depth, " levels");
}

}  // namespace farthing

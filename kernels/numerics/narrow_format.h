// narrow_format.h — the narrow float formats a cast can target, shared by every backend.
#pragma once

#include <cstddef>
#include <cstdint>

namespace farthing::numerics {

enum class NarrowFormat : uint8_t { kBf16, kFp16, kE4M3, kE5M2 };

constexpr size_t narrow_format_bytes(NarrowFormat format) {
  return format == NarrowFormat::kBf16 || format == NarrowFormat::kFp16 ? 2 : 1;
}

}  // namespace farthing::numerics

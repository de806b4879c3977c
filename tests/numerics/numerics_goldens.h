// numerics_goldens.h — what the cast tests share with tools/goldens/gen_numerics_goldens.py:
// the random-input recipe (so the goldens need not store inputs) and the file reader.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace farthing::test {

static_assert(std::endian::native == std::endian::little, "goldens are little-endian");

inline constexpr uint64_t kNumericsGoldenSeed = 0x6E756D6572696373ull;  // as the golden script
inline constexpr size_t kNumericsRandomCount = size_t(1) << 20;

// The golden script's random fp32 patterns: first half any pattern, second half a biased
// exponent in [100, 150] with random sign and mantissa.
inline std::vector<uint32_t> numerics_random_inputs() {
  SplitMix64 rng(kNumericsGoldenSeed);
  std::vector<uint32_t> bits(kNumericsRandomCount);
  for (size_t i = 0; i < kNumericsRandomCount; ++i) {
    const uint64_t r = rng.next();
    if (i < kNumericsRandomCount / 2) {
      bits[i] = uint32_t(r >> 32);
    } else {
      const uint32_t mantissa = uint32_t(r & 0x7FFFFFu);
      const uint32_t sign = uint32_t((r >> 23) & 1u);
      const uint32_t exponent = 100u + uint32_t((r >> 32) % 51u);
      bits[i] = (sign << 31) | (exponent << 23) | mantissa;
    }
  }
  return bits;
}

// Golden file tests/data/numerics/<name> of `count` little-endian values of T.
template <class T>
std::vector<T> load_numerics_golden(const std::string& name, size_t count) {
  const std::vector<uint8_t> bytes = read_file_bytes(test_data_dir() / "numerics" / name);
  EXPECT_EQ(bytes.size(), count * sizeof(T)) << name;
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// One record of edge_cases.bin: an fp32 input and its expected code in every format.
struct NumericsEdgeCase {
  uint32_t input;
  uint16_t bf16, fp16;
  uint8_t e4m3, e5m2;
};

// edge_cases.bin: "FNEDGE01", u32 count, u32 record size (12), then records of u32 input,
// u16 bf16, u16 fp16, u8 e4m3fn, u8 e5m2, u16 reserved. A bad header or size is a test failure.
inline std::vector<NumericsEdgeCase> load_numerics_edge_cases() {
  const std::vector<uint8_t> bytes = read_file_bytes(test_data_dir() / "numerics" / "edge_cases.bin");
  uint32_t count = 0, record_bytes = 0;
  if (bytes.size() < 16 || std::memcmp(bytes.data(), "FNEDGE01", 8) != 0) {
    ADD_FAILURE() << "edge_cases.bin: bad header";
    return {};
  }
  std::memcpy(&count, bytes.data() + 8, 4);
  std::memcpy(&record_bytes, bytes.data() + 12, 4);
  if (record_bytes != 12 || bytes.size() != 16 + size_t(count) * record_bytes) {
    ADD_FAILURE() << "edge_cases.bin: size " << bytes.size() << " does not match " << count
                  << " records of " << record_bytes << " bytes";
    return {};
  }
  std::vector<NumericsEdgeCase> cases(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* rec = bytes.data() + 16 + size_t(i) * record_bytes;
    std::memcpy(&cases[i].input, rec, 4);
    std::memcpy(&cases[i].bf16, rec + 4, 2);
    std::memcpy(&cases[i].fp16, rec + 6, 2);
    cases[i].e4m3 = rec[8];
    cases[i].e5m2 = rec[9];
  }
  return cases;
}

}  // namespace farthing::test

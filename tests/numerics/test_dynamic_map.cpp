// test_dynamic_map.cpp — the 8-bit maps built from bitsandbytes' recipe equal its golden
// tables bit for bit, and have the structure NUMERICS.md §3 describes.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/numerics/dynamic_map.h"
#include "kernels/numerics/host_device.h"
#include "tests/support/test_support.h"

namespace nm = farthing::numerics;

static std::vector<uint32_t> read_golden_map(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<uint32_t> bits;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int index;
    std::string hex;
    fields >> index >> hex;
    EXPECT_EQ(index, int(bits.size())) << "in " << path;
    bits.push_back(uint32_t(std::stoul(hex, nullptr, 16)));
  }
  return bits;
}

static void expect_map_equals_golden(nm::MapSign sign, const char* file) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto golden = read_golden_map(shared / "golden" / file);
  ASSERT_EQ(golden.size(), 256u);
  const nm::DynamicMap map = nm::make_dynamic_map(sign);
  int mismatches = 0;
  for (int i = 0; i < 256; ++i) {
    const uint32_t got = nm::f32_to_bits(map[size_t(i)]);
    if (got != golden[size_t(i)] && mismatches++ < 10) {
      ADD_FAILURE() << file << " index " << i << ": expected 0x" << std::hex << golden[size_t(i)]
                    << " got 0x" << got;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(DynamicMap, SignedEqualsBitsandbytesGolden) {
  expect_map_equals_golden(nm::MapSign::kSigned, "bnb_dynamic_map_signed.txt");
}

TEST(DynamicMap, UnsignedEqualsBitsandbytesGolden) {
  expect_map_equals_golden(nm::MapSign::kUnsigned, "bnb_dynamic_map_unsigned.txt");
}

TEST(DynamicMap, StructureOfTheSignedMap) {
  const nm::DynamicMap map = nm::make_dynamic_map(nm::MapSign::kSigned);
  for (int i = 1; i < 256; ++i) EXPECT_LT(map[size_t(i - 1)], map[size_t(i)]) << "sorted at " << i;
  for (int i = 0; i < 127; ++i) EXPECT_LT(map[size_t(i)], 0.0f);
  EXPECT_EQ(map[nm::kSignedMapZeroCode], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_GT(map[0], -1.0f);  // no -1.0 in the signed map
  EXPECT_NEAR(map[128], 5.5e-7f, 1e-12f);
}

TEST(DynamicMap, StructureOfTheUnsignedMap) {
  const nm::DynamicMap map = nm::make_dynamic_map(nm::MapSign::kUnsigned);
  for (int i = 1; i < 256; ++i) EXPECT_LT(map[size_t(i - 1)], map[size_t(i)]) << "sorted at " << i;
  EXPECT_EQ(map[nm::kUnsignedMapZeroCode], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_NEAR(map[1], 3.25e-7f, 1e-12f);
}

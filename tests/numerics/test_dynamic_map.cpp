// test_dynamic_map.cpp — the 8-bit maps built from bitsandbytes' recipe equal its golden
// tables bit for bit: the torch 1.13 map (../shared/golden), which farthing's 8-bit state uses,
// and the torch 2.x map (tests/data/numerics, bitsandbytes 0.50.2 under torch 2.15:
// tools/goldens/gen_dynamic_map_goldens.py); and they have the structure docs/numerics.md §3 describes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

static void expect_map_equals_golden(nm::MapSign sign, nm::MapLinspace linspace, const std::filesystem::path& file) {
  const auto golden = read_golden_map(file);
  ASSERT_EQ(golden.size(), 256u);
  const nm::DynamicMap map = nm::make_dynamic_map(sign, linspace);
  int mismatches = 0;
  for (int i = 0; i < 256; ++i) {
    const uint32_t got = nm::f32_to_bits(map[size_t(i)]);
    if (got != golden[size_t(i)] && mismatches++ < 10) {
      ADD_FAILURE() << file.filename() << " index " << i << ": expected 0x" << std::hex << golden[size_t(i)]
                    << " got 0x" << got;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(DynamicMap, SignedEqualsBitsandbytesGolden) {
  FARTHING_REQUIRE_SHARED(shared);
  expect_map_equals_golden(nm::MapSign::kSigned, nm::MapLinspace::kTorch1_13,
                           shared / "golden" / "bnb_dynamic_map_signed.txt");
}

TEST(DynamicMap, UnsignedEqualsBitsandbytesGolden) {
  FARTHING_REQUIRE_SHARED(shared);
  expect_map_equals_golden(nm::MapSign::kUnsigned, nm::MapLinspace::kTorch1_13,
                           shared / "golden" / "bnb_dynamic_map_unsigned.txt");
}

TEST(DynamicMap, SignedEqualsTodaysBitsandbytesUnderTorch2) {
  expect_map_equals_golden(nm::MapSign::kSigned, nm::MapLinspace::kTorch2,
                           farthing::test::test_data_dir() / "numerics" / "bnb_dynamic_map_torch2_signed.txt");
}

TEST(DynamicMap, UnsignedEqualsTodaysBitsandbytesUnderTorch2) {
  expect_map_equals_golden(nm::MapSign::kUnsigned, nm::MapLinspace::kTorch2,
                           farthing::test::test_data_dir() / "numerics" / "bnb_dynamic_map_torch2_unsigned.txt");
}

// Which map the 8-bit state uses: the torch 1.13 one, by default and by name (the name is what
// checkpoints record), and the two maps are not the same table.
TEST(DynamicMap, TheStateUsesTheTorch113Map) {
  EXPECT_EQ(nm::kStateDynamicMap, nm::MapLinspace::kTorch1_13);
  EXPECT_EQ(nm::dynamic_map_name(nm::kStateDynamicMap), "bitsandbytes-dynamic-torch1.13");
  for (nm::MapSign sign : {nm::MapSign::kSigned, nm::MapSign::kUnsigned}) {
    const nm::DynamicMap state = nm::make_dynamic_map(sign);
    const nm::DynamicMap old_map = nm::make_dynamic_map(sign, nm::MapLinspace::kTorch1_13);
    const nm::DynamicMap new_map = nm::make_dynamic_map(sign, nm::MapLinspace::kTorch2);
    int differ = 0;
    for (int i = 0; i < 256; ++i) {
      EXPECT_EQ(nm::f32_to_bits(state[size_t(i)]), nm::f32_to_bits(old_map[size_t(i)])) << "index " << i;
      if (nm::f32_to_bits(old_map[size_t(i)]) != nm::f32_to_bits(new_map[size_t(i)])) {
        ++differ;
        // One or two ulps apart (34 + 8 signed, 36 + 7 unsigned entries), never more.
        const int64_t ulps =
            std::abs(int64_t(nm::f32_to_bits(old_map[size_t(i)])) - int64_t(nm::f32_to_bits(new_map[size_t(i)])));
        EXPECT_LE(ulps, 2) << "index " << i;
      }
    }
    EXPECT_EQ(differ, sign == nm::MapSign::kSigned ? 42 : 43);
  }
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

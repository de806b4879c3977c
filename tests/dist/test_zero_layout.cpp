// test_zero_layout.cpp — ZeroLayout's arithmetic on awkward unit sizes (1000, 256, 70000 and 5
// elements, with a gap before the last) at world sizes 1, 2, 3 and 8: owned ranges tile each
// unit's aligned span exactly once, in rank order, on 256 boundaries; padding is the least that
// splits evenly; owned_shards() passes the optimizer's shard rules; bad units are refused with
// messages naming the factors. Hand-computed values pin the formula itself.
// Runs without MPI (label unit).
// Relies on: framework/dist/zero_layout.h, framework/optim/optim_config.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/dist/zero_layout.h"
#include "framework/optim/optim_config.h"

namespace farthing::dist {
namespace {

// Units as models/common/flat_layout.h packs them: 1000 elements, 256 (exactly one block),
// 70000 (a long ragged tail), then a 5-element unit placed after a 256-element gap.
std::vector<UnitRange> awkward_units() {
  return {{0, 1000}, {1024, 1280}, {1280, 71280}, {71680, 71685}};
}

// The span rounded up to 256, written out independently of the library.
int64_t aligned_end_of(const UnitRange& u) { return u.begin + (u.end - u.begin + 255) / 256 * 256; }

class ZeroLayoutWorlds : public ::testing::TestWithParam<int> {};

TEST_P(ZeroLayoutWorlds, OwnedRangesTileEachUnitOnceInRankOrder) {
  const int world = GetParam();
  const std::vector<UnitRange> units = awkward_units();
  for (int rank = 0; rank < world; ++rank) {
    const ZeroLayout layout(units, world, rank);
    ASSERT_EQ(layout.units().size(), units.size());
    EXPECT_EQ(layout.global_elems(), aligned_end_of(units.back()));
    for (size_t u = 0; u < units.size(); ++u) {
      SCOPED_TRACE("world " + std::to_string(world) + " unit " + std::to_string(u));
      const int64_t span = aligned_end_of(units[u]) - units[u].begin;
      const int64_t shard = layout.shard_elems(u);
      EXPECT_EQ(shard % 256, 0);
      EXPECT_EQ(layout.padded_elems(u), shard * world);
      EXPECT_GE(layout.padded_elems(u), span);
      EXPECT_LT(layout.padded_elems(u) - span, 256 * world) << "more padding than needed";
      EXPECT_EQ(layout.aligned_end(u), aligned_end_of(units[u]));
      EXPECT_EQ(layout.needs_staging(u), layout.padded_elems(u) > span);
      // Rank r's range starts where rank r-1's stopped; together they cover the span once.
      int64_t cursor = units[u].begin;
      for (int r = 0; r < world; ++r) {
        const UnitRange mine = layout.owned(u, r);
        EXPECT_EQ(mine.begin, std::min(units[u].begin + r * shard, aligned_end_of(units[u])));
        EXPECT_EQ(mine.begin, cursor) << "rank " << r;
        EXPECT_EQ(mine.begin % 256, 0) << "rank " << r;
        EXPECT_EQ(mine.size() % 256, 0) << "rank " << r;
        EXPECT_LE(mine.size(), shard) << "rank " << r;
        cursor = mine.end;
      }
      EXPECT_EQ(cursor, aligned_end_of(units[u]));
    }
  }
}

TEST_P(ZeroLayoutWorlds, OwnedShardsPassTheOptimizerRulesAndAddUp) {
  const int world = GetParam();
  const std::vector<UnitRange> units = awkward_units();
  optim::OptimizerConfig config;
  config.groups.push_back({"all", {}, optim::StateFormat::kBlock8});
  for (size_t u = 0; u < units.size(); ++u) {
    config.ranges.push_back({"unit" + std::to_string(u), uint64_t(units[u].begin),
                             uint64_t(units[u].size()), 0, false});
  }
  int64_t owned_total = 0;
  for (int rank = 0; rank < world; ++rank) {
    const ZeroLayout layout(units, world, rank);
    const std::vector<optim::ShardSpec> shards = layout.owned_shards();
    EXPECT_NO_THROW(optim::validate_optimizer_config(config, shards)) << "rank " << rank;
    int64_t shard_total = 0;
    size_t next = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      const UnitRange mine = layout.owned(u, rank);
      if (mine.empty()) continue;
      ASSERT_LT(next, shards.size());
      EXPECT_EQ(shards[next].global_offset, uint64_t(mine.begin));
      EXPECT_EQ(shards[next].numel, uint64_t(mine.size()));
      ++next;
    }
    EXPECT_EQ(next, shards.size()) << "owned_shards() holds an empty or extra shard";
    for (const optim::ShardSpec& s : shards) shard_total += int64_t(s.numel);
    EXPECT_EQ(layout.owned_elems(), shard_total);
    owned_total += layout.owned_elems();
  }
  int64_t spans = 0;
  for (const UnitRange& u : units) spans += aligned_end_of(u) - u.begin;
  EXPECT_EQ(owned_total, spans);
}

INSTANTIATE_TEST_SUITE_P(Worlds, ZeroLayoutWorlds, ::testing::Values(1, 2, 3, 8));

// The formula itself, computed by hand: P = round_up(round_up(n, 256), 256 * world), L = P / world.
TEST(ZeroLayout, HandComputedShards) {
  const std::vector<UnitRange> units = awkward_units();
  // world 1: no padding beyond 256 alignment; one rank owns every aligned span.
  const ZeroLayout one(units, 1, 0);
  EXPECT_EQ(one.padded_elems(0), 1024);
  EXPECT_EQ(one.padded_elems(2), 70144);
  EXPECT_EQ(one.padded_elems(3), 256);
  for (size_t u = 0; u < units.size(); ++u) EXPECT_FALSE(one.needs_staging(u)) << "unit " << u;
  EXPECT_EQ(one.max_padded_elems(), 70144);
  // world 3, unit 0 (1000): span 1024, P 1536, L 512 -> [0,512) [512,1024) and rank 2 empty.
  const ZeroLayout three(units, 3, 2);
  EXPECT_EQ(three.shard_elems(0), 512);
  EXPECT_EQ(three.owned(0, 0).begin, 0);
  EXPECT_EQ(three.owned(0, 1).end, 1024);
  EXPECT_TRUE(three.owned(0, 2).empty());
  EXPECT_EQ(three.owned(0, 2).begin, 1024);
  // world 3, unit 2 (70000): span 70144, P round_up(70144, 768) = 70656, L 23552.
  EXPECT_EQ(three.shard_elems(2), 23552);
  EXPECT_EQ(three.owned(2, 2).begin, 1280 + 2 * 23552);
  EXPECT_EQ(three.owned(2, 2).end, 1280 + 70144);
  // world 8, unit 2: P round_up(70144, 2048) = 71680, L 8960; rank 7 gets 70144 - 7*8960 = 7424.
  const ZeroLayout eight(units, 8, 7);
  EXPECT_EQ(eight.shard_elems(2), 8960);
  EXPECT_EQ(eight.owned(2, 7).size(), 7424);
  EXPECT_EQ(eight.max_padded_elems(), 71680);
  // world 8, unit 3 (5 elements): L 256, only rank 0 owns anything.
  EXPECT_EQ(eight.owned(3, 0).size(), 256);
  for (int r = 1; r < 8; ++r) EXPECT_TRUE(eight.owned(3, r).empty()) << "rank " << r;
  // Rank 7 of 8 owns parts of units 2 only (units 0, 1, 3 are too short to reach it).
  const std::vector<optim::ShardSpec> shards = eight.owned_shards();
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].global_offset, uint64_t(1280 + 7 * 8960));
  EXPECT_EQ(eight.owned_elems(), 7424);
}

TEST(ZeroLayout, EmptyUnitsAndNoUnitsOwnNothing) {
  const ZeroLayout none({}, 2, 1);
  EXPECT_EQ(none.global_elems(), 0);
  EXPECT_EQ(none.max_padded_elems(), 0);
  EXPECT_TRUE(none.owned_shards().empty());
  const ZeroLayout empty_unit({{0, 0}, {0, 300}}, 2, 0);
  EXPECT_EQ(empty_unit.padded_elems(0), 0);
  EXPECT_TRUE(empty_unit.owned(0, 0).empty());
  EXPECT_EQ(empty_unit.owned_shards().size(), 1u);
}

// A check's message, or "" when nothing was thrown.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ZeroLayout, RefusesBadUnitsNamingTheFactors) {
  std::string message = error_of([] { ZeroLayout({{0, 10}, {100, 200}}, 2, 0); });
  EXPECT_NE(message.find("unit 1 begins at global element 100"), std::string::npos) << message;
  message = error_of([] { ZeroLayout({{0, 300}, {256, 600}}, 2, 0); });
  EXPECT_NE(message.find("unit 0 runs to round_up(end, 256) = 512"), std::string::npos) << message;
  message = error_of([] { ZeroLayout({{512, 256}}, 2, 0); });
  EXPECT_NE(message.find("ends at 256 before its begin 512"), std::string::npos) << message;
  message = error_of([] { ZeroLayout({{0, 10}}, 2, 2); });
  EXPECT_NE(message.find("rank 2 is not a rank of a world of size 2"), std::string::npos) << message;
  message = error_of([] { ZeroLayout({{0, 10}}, 0, 0); });
  EXPECT_NE(message.find("world_size is 0"), std::string::npos) << message;
  message = error_of([] { ZeroLayout({{0, 10}}, 2, 0).owned(1, 0); });
  EXPECT_NE(message.find("unit 1 does not exist (the layout has 1 units)"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace farthing::dist

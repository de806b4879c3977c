// test_zero_collectives.cpp — ZeroCollectives against goldens computed in full on every rank
// (Transformer Engine's habit: every rank builds all ranks' seeded inputs, sums them plainly in
// rank order, and checks the elements it holds): stage 1 and stage 2/3 gradient sums bitwise,
// gather_owned for bf16 and f32, elements between units never touched, the byte count, the
// staging buffer's memory charge, and the world-size-1 case doing nothing at all.
// Runs as np=1 without mpirun (label unit) and under mpirun -np 2 / -np 3 (label mpi).
// Relies on: framework/dist (ZeroLayout, ZeroCollectives, MpiCommunicator),
// tests/dist/mpi_test_main.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/zero_collectives.h"
#include "tests/support/test_support.h"

namespace farthing::dist {
namespace {

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// Sizes chosen so that at np 1, 2 and 3 some units fit their padding in place and others
// need the staging buffer, some ranks own short or empty ranges, and a gap lies between units:
//   1000 (np2: in place; np3: staged, rank 2 empty), 256 (staged at np>1), 70000 (np2 in place,
//   np3 staged), 4608 = 256*18 (in place at every np), 1537 (ragged), then 5 after a gap.
std::vector<UnitRange> awkward_units() {
  return {{0, 1000},         {1024, 1280},      {1280, 71280},
          {71424, 76032},    {76032, 77569},    {78336, 78341}};
}

ZeroLayout layout_for_world() {
  return ZeroLayout(awkward_units(), world().world_size(), world().rank());
}

// Elements outside every aligned span (gaps) carry this and must keep it.
constexpr float kGapSentinel = -12345.0f;

bool in_some_span(const ZeroLayout& layout, int64_t i) {
  for (size_t u = 0; u < layout.units().size(); ++u) {
    if (i >= layout.units()[u].begin && i < layout.aligned_end(u)) return true;
  }
  return false;
}

// Rank r's gradient contribution: random signs and exponents over 2^-20 .. 2^20, so that the
// order of the sum changes its rounding; gaps hold the sentinel.
std::vector<float> gradients_of(const ZeroLayout& layout, int rank) {
  test::SplitMix64 rng(0x2E80000ull + uint64_t(rank) * 7919ull);
  std::vector<float> g(size_t(layout.global_elems()));
  for (int64_t i = 0; i < layout.global_elems(); ++i) {
    const uint64_t bits = rng.next();
    const double mantissa = double(bits >> 11) * 0x1p-53;
    const float x = float(((bits & 1) ? -1.0 : 1.0) * std::ldexp(1.0 + mantissa, int(bits % 41) - 20));
    g[size_t(i)] = in_some_span(layout, i) ? x : kGapSentinel;
  }
  return g;
}

// The golden: ((g_0 + g_1) + g_2) + ..., written plainly.
std::vector<float> rank_order_sum(const ZeroLayout& layout) {
  std::vector<float> sum = gradients_of(layout, 0);
  for (int r = 1; r < layout.world_size(); ++r) {
    const std::vector<float> g = gradients_of(layout, r);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + g[i];
  }
  return sum;
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Expected bytes sent per call, from the textbook volumes (independent of the library's code).
int64_t expected_all_reduce_bytes(const ZeroLayout& layout) {
  const int64_t n = layout.world_size();
  int64_t total = 0;
  for (size_t u = 0; u < layout.units().size(); ++u) {
    const int64_t span = layout.aligned_end(u) - layout.units()[u].begin;
    total += 2 * (n - 1) * ((span + n - 1) / n) * 4;  // ring: 2(N-1)/N of the (padded) bytes
  }
  return total;
}
int64_t expected_scatter_or_gather_bytes(const ZeroLayout& layout, int64_t elem_bytes) {
  const int64_t n = layout.world_size();
  int64_t total = 0;
  for (size_t u = 0; u < layout.units().size(); ++u) {
    total += (n - 1) * layout.padded_elems(u) * elem_bytes / n;  // (N-1)/N of the padded bytes
  }
  return total;
}

TEST(ZeroCollectives, Stage1AllReduceIsTheRankOrderSumEverywhere) {
  const ZeroLayout layout = layout_for_world();
  ZeroCollectives zero(layout, world());
  std::vector<float> grads = gradients_of(layout, world().rank());
  const std::vector<float> golden = rank_order_sum(layout);
  zero.reduce_gradients(grads.data(), 1);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < layout.global_elems(); ++i) {
    const float expected = in_some_span(layout, i) ? golden[size_t(i)] : kGapSentinel;
    if (bits_of(grads[size_t(i)]) != bits_of(expected) && mismatches++ < 5) {
      ADD_FAILURE() << "element " << i << ": " << grads[size_t(i)] << " != " << expected;
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(zero.bytes_communicated(), expected_all_reduce_bytes(layout));
}

class ZeroScatterStages : public ::testing::TestWithParam<int> {};

TEST_P(ZeroScatterStages, ReduceScatterLeavesTheRankOrderSumInOwnedRanges) {
  const ZeroLayout layout = layout_for_world();
  ZeroCollectives zero(layout, world());
  std::vector<float> grads = gradients_of(layout, world().rank());
  const std::vector<float> golden = rank_order_sum(layout);
  zero.reduce_gradients(grads.data(), GetParam());
  int64_t checked = 0;
  int64_t mismatches = 0;
  for (size_t u = 0; u < layout.units().size(); ++u) {
    const UnitRange mine = layout.owned(u, world().rank());
    for (int64_t i = mine.begin; i < mine.end; ++i, ++checked) {
      if (bits_of(grads[size_t(i)]) != bits_of(golden[size_t(i)]) && mismatches++ < 5) {
        ADD_FAILURE() << "unit " << u << " element " << i << ": " << grads[size_t(i)]
                      << " != " << golden[size_t(i)];
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(checked, layout.owned_elems());
  for (int64_t i = 0; i < layout.global_elems(); ++i) {
    if (!in_some_span(layout, i)) {
      ASSERT_EQ(grads[size_t(i)], kGapSentinel) << "gap element " << i << " was written";
    }
  }
  EXPECT_EQ(zero.bytes_communicated(), expected_scatter_or_gather_bytes(layout, 4));
}

INSTANTIATE_TEST_SUITE_P(Stages, ZeroScatterStages, ::testing::Values(2, 3));

// The value every rank should end with at element i (the owner's), as bits of the dtype.
uint32_t truth_bits(int64_t i, int salt) {
  test::SplitMix64 rng(0x7A07000ull + uint64_t(i) * 31ull + uint64_t(salt));
  return uint32_t(rng.next());
}

// Rank `rank`'s buffer before gather_owned: the truth in its owned ranges, rank-specific
// garbage in the rest of every span, the sentinel in gaps.
template <class Bits>
std::vector<Bits> values_before_gather(const ZeroLayout& layout, int rank, int salt) {
  std::vector<Bits> v(size_t(layout.global_elems()), Bits(0xBEEF + rank));
  for (int64_t i = 0; i < layout.global_elems(); ++i) {
    if (!in_some_span(layout, i)) v[size_t(i)] = Bits(bits_of(kGapSentinel));
  }
  for (size_t u = 0; u < layout.units().size(); ++u) {
    const UnitRange mine = layout.owned(u, rank);
    for (int64_t i = mine.begin; i < mine.end; ++i) v[size_t(i)] = Bits(truth_bits(i, salt));
  }
  return v;
}

template <class Bits>
void check_gather(DType dtype) {
  const ZeroLayout layout = layout_for_world();
  ZeroCollectives zero(layout, world());
  const int salt = int(sizeof(Bits));
  std::vector<Bits> values = values_before_gather<Bits>(layout, world().rank(), salt);
  zero.gather_owned(values.data(), dtype);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < layout.global_elems(); ++i) {
    const Bits expected =
        in_some_span(layout, i) ? Bits(truth_bits(i, salt)) : Bits(bits_of(kGapSentinel));
    if (values[size_t(i)] != expected && mismatches++ < 5) {
      ADD_FAILURE() << dtype_name(dtype) << " element " << i << ": 0x" << std::hex
                    << uint32_t(values[size_t(i)]) << " != 0x" << uint32_t(expected);
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(zero.bytes_communicated(), expected_scatter_or_gather_bytes(layout, sizeof(Bits)));
}

TEST(ZeroCollectives, GatherOwnedBf16ReproducesTheFullBufferEverywhere) {
  check_gather<uint16_t>(DType::kBF16);
}

TEST(ZeroCollectives, GatherOwnedF32ReproducesTheFullBufferEverywhere) {
  check_gather<uint32_t>(DType::kF32);
}

// ZeRO-2's round trip: reduce-scatter then gather the owned sums equals the stage-1 all-reduce.
TEST(ZeroCollectives, ScatterThenGatherEqualsAllReduce) {
  const ZeroLayout layout = layout_for_world();
  ZeroCollectives zero(layout, world());
  std::vector<float> all_reduced = gradients_of(layout, world().rank());
  std::vector<float> round_trip = all_reduced;
  zero.reduce_gradients(all_reduced.data(), 1);
  zero.reduce_gradients(round_trip.data(), 2);
  zero.gather_owned(round_trip.data(), DType::kF32);
  EXPECT_EQ(std::memcmp(all_reduced.data(), round_trip.data(), all_reduced.size() * sizeof(float)),
            0);
  EXPECT_EQ(zero.bytes_communicated(), expected_all_reduce_bytes(layout) +
                                           2 * expected_scatter_or_gather_bytes(layout, 4));
}

// The staging buffer is charged to comm buffers, sized for the largest staged unit, and absent
// when no unit needs it (always so at world size 1: the unit's aligned span is its padding).
TEST(ZeroCollectives, StagingBufferOnlyWhereAUnitNeedsIt) {
  const ZeroLayout layout = layout_for_world();
  int64_t staged_elems = 0;
  for (size_t u = 0; u < layout.units().size(); ++u) {
    if (layout.needs_staging(u)) staged_elems = std::max(staged_elems, layout.padded_elems(u));
  }
  if (world().world_size() == 1) {
    EXPECT_EQ(staged_elems, 0);
  }
  MemoryTracker& tracker = memory_tracker(Device::cpu());
  const int64_t before =
      tracker.snapshot().current_bytes[size_t(MemoryCategory::kCommBuffers)];
  ZeroCollectives zero(layout, world());
  const int64_t after = tracker.snapshot().current_bytes[size_t(MemoryCategory::kCommBuffers)];
  EXPECT_EQ(after - before, staged_elems * 4);
}

// World size 1 is free: nothing moves, the buffer is its own sum, no bytes are counted.
TEST(ZeroCollectives, WorldSizeOneLeavesBuffersAlone) {
  const ZeroLayout layout(awkward_units(), 1, 0);
  if (world().world_size() != 1) {
    GTEST_SKIP() << "runs at np=1 (a layout of one rank needs a communicator of one rank)";
  }
  ZeroCollectives zero(layout, world());
  const std::vector<float> original = gradients_of(layout, 0);
  std::vector<float> grads = original;
  for (int stage = 1; stage <= 3; ++stage) zero.reduce_gradients(grads.data(), stage);
  zero.gather_owned(grads.data(), DType::kF32);
  EXPECT_EQ(std::memcmp(grads.data(), original.data(), grads.size() * sizeof(float)), 0);
  EXPECT_EQ(zero.bytes_communicated(), 0);
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

TEST(ZeroCollectives, RefusesBadCallsNamingTheFactors) {
  const ZeroLayout layout = layout_for_world();
  ZeroCollectives zero(layout, world());
  std::vector<float> grads(size_t(layout.global_elems()));
  std::string message = error_of([&] { zero.reduce_gradients(grads.data(), 4); });
  EXPECT_NE(message.find("ZeRO stage 4 does not exist"), std::string::npos) << message;
  std::vector<double> wide(size_t(layout.global_elems()));
  message = error_of([&] { zero.gather_owned(wide.data(), DType::kF64); });
  EXPECT_NE(message.find("f64 has 8-byte elements"), std::string::npos) << message;
  const ZeroLayout other_world(awkward_units(), world().world_size() + 1, 0);
  message = error_of([&] { ZeroCollectives mismatched(other_world, world()); });
  EXPECT_NE(message.find("world_size " + std::to_string(world().world_size() + 1)),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace farthing::dist

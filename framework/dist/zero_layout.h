// zero_layout.h — how ZeRO splits the units of the flat parameter space over the ranks: which
// global elements each rank owns, as the shards its optimizer steps.
//
// Every unit is padded *in storage* to P_u = round_up(round_up(end - begin, 256), 256 * world)
// elements and cut into world equal shards of L_u = P_u / world (a multiple of 256). Rank r
// owns global [begin + r*L_u, begin + (r+1)*L_u) clipped to the unit's 256-aligned span
// [begin, round_up(end, 256)): the padding past the span is owned by nobody, so a rank's owned
// range may be short or empty. Nothing moves in the global space (flat_layout.h): offsets never
// depend on the world size, and since units and shards start on 256 boundaries, 8-bit blocks
// never straddle a shard.
// Relies on: framework/core (Error), framework/optim/optim_config.h (ShardSpec).
// Tested by: tests/dist/test_zero_layout.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/optim/optim_config.h"

namespace farthing::dist {

inline constexpr int64_t kZeroAlignElems = 256;  // one 8-bit quantization block

// Global elements [begin, end) of one unit (models/common/flat_layout.h's ParamUnit, passed as
// a plain range because framework/ does not depend on models/).
struct UnitRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end == begin; }
};

class ZeroLayout {
 public:
  // Units in global order: each begin a multiple of 256, end >= begin, and each unit starting
  // at or after round_up(previous end, 256). Throws naming the offending unit otherwise.
  ZeroLayout(std::vector<UnitRange> units, int world_size, int rank);

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  const std::vector<UnitRange>& units() const { return units_; }

  int64_t shard_elems(size_t unit) const;   // L_u
  int64_t padded_elems(size_t unit) const;  // P_u = world_size * L_u
  // round_up(end, 256): where the unit's owned ranges stop.
  int64_t aligned_end(size_t unit) const;
  // True when the unit's padded storage runs past its aligned span (P_u > span), so that a
  // collective over it needs a staging buffer instead of working in place.
  bool needs_staging(size_t unit) const;
  // Elements every flat buffer handed to ZeroCollectives must have: the last unit's aligned end.
  int64_t global_elems() const;

  // The global elements rank `rank` owns in `unit`; begin == end when it owns none.
  UnitRange owned(size_t unit, int rank) const;
  // This rank's non-empty owned ranges in unit order: what its optimizer steps.
  std::vector<optim::ShardSpec> owned_shards() const;
  int64_t owned_elems() const;       // this rank's owned elements, over all units
  int64_t max_padded_elems() const;  // the largest P_u: a staging buffer for any one unit

 private:
  const UnitRange& unit_at(size_t unit) const;  // throws on an index past the last unit

  std::vector<UnitRange> units_;
  std::vector<int64_t> shard_elems_;  // L_u per unit
  int world_size_ = 1;
  int rank_ = 0;
};

}  // namespace farthing::dist

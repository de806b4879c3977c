// zero_layout.cpp — ZeroLayout: the arithmetic of unit padding and owned ranges.
#include "framework/dist/zero_layout.h"

#include <algorithm>

#include "framework/core/error.h"

namespace farthing::dist {
namespace {

int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

}  // namespace

ZeroLayout::ZeroLayout(std::vector<UnitRange> units, int world_size, int rank)
    : units_(std::move(units)), world_size_(world_size), rank_(rank) {
  FARTHING_CHECK(world_size >= 1, "ZeroLayout: world_size is ", world_size, "; it must be >= 1");
  FARTHING_CHECK(rank >= 0 && rank < world_size, "ZeroLayout: rank ", rank,
                 " is not a rank of a world of size ", world_size);
  const int64_t shard_multiple = kZeroAlignElems * world_size;
  int64_t previous_aligned_end = 0;
  shard_elems_.reserve(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) {
    const UnitRange& unit = units_[u];
    FARTHING_CHECK(unit.begin >= 0 && unit.begin % kZeroAlignElems == 0, "ZeroLayout: unit ", u,
                   " begins at global element ", unit.begin, ", not a non-negative multiple of ",
                   kZeroAlignElems, " (units start on 8-bit block boundaries)");
    FARTHING_CHECK(unit.end >= unit.begin, "ZeroLayout: unit ", u, " ends at ", unit.end,
                   " before its begin ", unit.begin);
    FARTHING_CHECK(unit.begin >= previous_aligned_end, "ZeroLayout: unit ", u, " begins at ",
                   unit.begin, " but unit ", u - 1, " runs to round_up(end, ", kZeroAlignElems,
                   ") = ", previous_aligned_end, " (units must be in global order and disjoint)");
    const int64_t aligned_span = round_up(unit.size(), kZeroAlignElems);
    shard_elems_.push_back(round_up(aligned_span, shard_multiple) / world_size);
    previous_aligned_end = unit.begin + aligned_span;
  }
}

const UnitRange& ZeroLayout::unit_at(size_t unit) const {
  FARTHING_CHECK(unit < units_.size(), "ZeroLayout: unit ", unit, " does not exist (the layout has ",
                 units_.size(), " units)");
  return units_[unit];
}

int64_t ZeroLayout::shard_elems(size_t unit) const {
  unit_at(unit);
  return shard_elems_[unit];
}

int64_t ZeroLayout::padded_elems(size_t unit) const { return shard_elems(unit) * world_size_; }

int64_t ZeroLayout::aligned_end(size_t unit) const {
  const UnitRange& u = unit_at(unit);
  return u.begin + round_up(u.size(), kZeroAlignElems);
}

bool ZeroLayout::needs_staging(size_t unit) const {
  return unit_at(unit).begin + padded_elems(unit) > aligned_end(unit);
}

int64_t ZeroLayout::global_elems() const {
  return units_.empty() ? 0 : aligned_end(units_.size() - 1);
}

UnitRange ZeroLayout::owned(size_t unit, int rank) const {
  const UnitRange& u = unit_at(unit);
  FARTHING_CHECK(rank >= 0 && rank < world_size_, "ZeroLayout::owned: rank ", rank,
                 " is not a rank of a world of size ", world_size_);
  const int64_t stop = aligned_end(unit);
  const int64_t begin = std::min(u.begin + rank * shard_elems_[unit], stop);
  const int64_t end = std::min(begin + shard_elems_[unit], stop);
  return {begin, end};
}

std::vector<optim::ShardSpec> ZeroLayout::owned_shards() const {
  std::vector<optim::ShardSpec> shards;
  for (size_t u = 0; u < units_.size(); ++u) {
    const UnitRange mine = owned(u, rank_);
    if (mine.empty()) continue;  // the optimizer refuses empty shards
    shards.push_back({uint64_t(mine.begin), uint64_t(mine.size())});
  }
  return shards;
}

int64_t ZeroLayout::owned_elems() const {
  int64_t total = 0;
  for (size_t u = 0; u < units_.size(); ++u) total += owned(u, rank_).size();
  return total;
}

int64_t ZeroLayout::max_padded_elems() const {
  int64_t largest = 0;
  for (size_t u = 0; u < units_.size(); ++u) largest = std::max(largest, padded_elems(u));
  return largest;
}

}  // namespace farthing::dist

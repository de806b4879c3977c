// zero_collectives.cpp — ZeroCollectives: per-unit collectives, in place where the padded
// storage fits the unit, through the staging buffer where it does not.
#include "framework/dist/zero_collectives.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/error.h"

namespace farthing::dist {
namespace {

// The staged unit whose collective is in flight, and the copy that finishes it once the
// collective is done. Staged units share the one staging buffer, so at most one is pending:
// starting the next waits for this one (while in-place units keep communicating meanwhile).
class StagedCollective {
 public:
  void start(CommHandle handle, std::function<void()> copy_out) {
    finish();
    handle_ = std::move(handle);
    copy_out_ = std::move(copy_out);
  }
  void finish() {
    if (!copy_out_) return;
    handle_.wait();
    std::function<void()> copy_out = std::move(copy_out_);
    copy_out_ = nullptr;
    copy_out();
  }

 private:
  CommHandle handle_;
  std::function<void()> copy_out_;
};

void wait_all(std::vector<CommHandle>& handles) {
  for (CommHandle& handle : handles) handle.wait();
  handles.clear();
}

char* element_ptr(void* base, int64_t index, size_t elem_bytes) {
  return static_cast<char*>(base) + size_t(index) * elem_bytes;
}

}  // namespace

ZeroCollectives::ZeroCollectives(const ZeroLayout& layout, Communicator& comm)
    : layout_(layout), comm_(comm), device_(comm.device()), backend_(backend_for(comm.device())) {
  FARTHING_CHECK(layout.world_size() == comm.world_size() && layout.rank() == comm.rank(),
                 "ZeroCollectives: the layout is for rank ", layout.rank(), " of world_size ",
                 layout.world_size(), " but the communicator is rank ", comm.rank(),
                 " of world_size ", comm.world_size(), "; build the layout from the communicator");
  const int64_t bytes = staging_bytes(layout_);
  if (bytes > 0) staging_ = Buffer(comm.device(), size_t(bytes), MemoryCategory::kCommBuffers);
}

void ZeroCollectives::copy_elements(void* dst, const void* src, int64_t count, DType dtype) {
  if (count == 0) return;
  backend_.copy(Tensor(dst, dtype, Shape{count}, device_), Tensor(const_cast<void*>(src), dtype, Shape{count}, device_));
}

int64_t ZeroCollectives::staging_bytes(const ZeroLayout& layout) {
  if (layout.world_size() == 1) return 0;  // every unit's storage is its aligned span
  int64_t staging_elems = 0;
  for (size_t u = 0; u < layout.units().size(); ++u) {
    if (layout.needs_staging(u)) staging_elems = std::max(staging_elems, layout.padded_elems(u));
  }
  // NOTE: f32 staging also fits every narrower dtype gather_owned accepts.
  return staging_elems * int64_t(sizeof(float));
}

void ZeroCollectives::reduce_gradients(float* grads, int stage) {
  FARTHING_CHECK(stage >= 1 && stage <= 3, "reduce_gradients: ZeRO stage ", stage,
                 " does not exist; stages are 1 (all-reduce), 2 and 3 (reduce-scatter)");
  FARTHING_CHECK(grads != nullptr || layout_.global_elems() == 0,
                 "reduce_gradients: grads is null but the layout spans ", layout_.global_elems(),
                 " elements");
  if (layout_.world_size() == 1) return;  // the sum over one rank is its own gradients
  if (stage == 1) {
    all_reduce_units(grads);
  } else {
    reduce_scatter_units(grads);
  }
}

namespace {

// A unit as a sharded collective sees it: values [begin, begin + span) of the flat space, padded
// to `padded` elements, `shard` of them per rank.
struct ShardedUnit {
  size_t unit;
  int64_t begin, span, padded, shard;
};

// Visits every unit with elements, in order, after adding what this rank sends of it in a
// reduce-scatter or an all-gather (world - 1 shards of elem_bytes each) to bytes_sent.
template <class Visit>
void for_each_sharded_unit(const ZeroLayout& layout, int64_t elem_bytes, int64_t& bytes_sent, Visit&& visit) {
  const int64_t world = layout.world_size();
  for (size_t u = 0; u < layout.units().size(); ++u) {
    const int64_t begin = layout.units()[u].begin;
    const ShardedUnit x{u, begin, layout.aligned_end(u) - begin, layout.padded_elems(u), layout.shard_elems(u)};
    if (x.padded == 0) continue;
    bytes_sent += (world - 1) * x.shard * elem_bytes;
    visit(x);
  }
}

}  // namespace

void ZeroCollectives::all_reduce_units(float* grads) {
  const int64_t world = layout_.world_size();
  std::vector<CommHandle> in_flight;
  for (size_t u = 0; u < layout_.units().size(); ++u) {
    const int64_t begin = layout_.units()[u].begin;
    const int64_t span = layout_.aligned_end(u) - begin;
    if (span == 0) continue;
    in_flight.push_back(
        comm_.all_reduce_async(Tensor(grads + begin, DType::kF32, {span}, device_), ReduceOp::kSum));
    bytes_communicated_ += 2 * (world - 1) * ((span + world - 1) / world) * int64_t(sizeof(float));
  }
  wait_all(in_flight);
}

void ZeroCollectives::reduce_scatter_units(float* grads) {
  const int rank = layout_.rank();
  float* staging = static_cast<float*>(staging_.data());
  std::vector<CommHandle> in_flight;
  StagedCollective staged;
  for_each_sharded_unit(layout_, sizeof(float), bytes_communicated_, [&](const ShardedUnit& x) {
    const int64_t begin = x.begin, span = x.span, padded = x.padded, shard = x.shard;
    if (!layout_.needs_staging(x.unit)) {
      // NOTE: out is this rank's slot of in (in-place reduce-scatter, as NCCL defines it); the
      // MPI communicator reads all of in before it writes out.
      in_flight.push_back(comm_.reduce_scatter_async(
          Tensor(grads + begin + rank * shard, DType::kF32, {shard}, device_),
          Tensor(grads + begin, DType::kF32, {padded}, device_), ReduceOp::kSum));
      return;
    }
    staged.finish();  // the staging buffer is free from here
    copy_elements(staging, grads + begin, span, DType::kF32);
    // NOTE: the padding is summed too (and dropped): zeros keep it finite and deterministic.
    backend_.fill_bytes(staging + span, 0, size_t(padded - span) * sizeof(float));
    const UnitRange mine = layout_.owned(x.unit, rank);
    staged.start(comm_.reduce_scatter_async(Tensor(staging + rank * shard, DType::kF32, {shard}, device_),
                                            Tensor(staging, DType::kF32, {padded}, device_),
                                            ReduceOp::kSum),
                 [=, this] { copy_elements(grads + mine.begin, staging + (mine.begin - begin), mine.size(), DType::kF32); });
  });
  staged.finish();
  wait_all(in_flight);
}

void ZeroCollectives::gather_owned(void* values, DType dtype) {
  const size_t elem_bytes = dtype_size_bytes(dtype);
  FARTHING_CHECK(elem_bytes <= sizeof(float), "gather_owned: ", dtype_name(dtype), " has ",
                 elem_bytes, "-byte elements but the staging buffer holds ", sizeof(float),
                 "-byte ones; gather bf16 weights or f32 master values");
  FARTHING_CHECK(values != nullptr || layout_.global_elems() == 0,
                 "gather_owned: values is null but the layout spans ", layout_.global_elems(),
                 " elements");
  if (layout_.world_size() == 1) return;  // the only rank owns every element already
  const int rank = layout_.rank();
  char* staging = static_cast<char*>(staging_.data());
  std::vector<CommHandle> in_flight;
  StagedCollective staged;
  for_each_sharded_unit(layout_, int64_t(elem_bytes), bytes_communicated_, [&](const ShardedUnit& x) {
    const int64_t begin = x.begin, span = x.span, padded = x.padded, shard = x.shard;
    if (!layout_.needs_staging(x.unit)) {
      in_flight.push_back(
          comm_.all_gather_async(Tensor(element_ptr(values, begin, elem_bytes), dtype, {padded}, device_),
                                 Tensor(element_ptr(values, begin + rank * shard, elem_bytes),
                                        dtype, {shard}, device_)));
      return;
    }
    staged.finish();  // the staging buffer is free from here
    const UnitRange mine = layout_.owned(x.unit, rank);
    char* slot = staging + size_t(rank * shard) * elem_bytes;
    copy_elements(slot, element_ptr(values, mine.begin, elem_bytes), mine.size(), dtype);
    // The slot's tail past the span is padding the peers drop; zeros keep it deterministic.
    backend_.fill_bytes(slot + size_t(mine.size()) * elem_bytes, 0, size_t(shard - mine.size()) * elem_bytes);
    staged.start(comm_.all_gather_async(Tensor(staging, dtype, {padded}, device_),
                                        Tensor(slot, dtype, {shard}, device_)),
                 [=, this] { copy_elements(element_ptr(values, begin, elem_bytes), staging, span, dtype); });
  });
  staged.finish();
  wait_all(in_flight);
}

}  // namespace farthing::dist

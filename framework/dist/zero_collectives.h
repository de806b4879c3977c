// zero_collectives.h — ZeRO's data movement over a ZeroLayout, unit by unit: gradients summed
// over the ranks (all-reduce at stage 1, reduce-scatter into the owners at stages 2 and 3) and
// the owners' new values gathered back to every rank after the optimizer step.
//
// Buffers are the full global flat space of this rank (ZeroLayout::global_elems() elements at
// least), in the memory of the communicator's device. A unit whose padded storage P_u fits its aligned span goes through the
// communicator in place; one whose padding runs past the span (into the next unit) is copied
// through one staging buffer of the largest such P_u (MemoryCategory::kCommBuffers). Units'
// collectives are issued asynchronously, so a staged unit's copies overlap the communication
// of the units before it; every call has finished when it returns. At world size 1 nothing is
// copied or sent: the sum over one rank is its own contribution, and it owns everything.
//
// NOTE (numerics): sums are the communicator's, in fixed rank order, so every owned element is
// bitwise ((g_0 + g_1) + g_2) + ..., identical at every stage and on every rank.
// Relies on: framework/dist/zero_layout.h, framework/dist/communicator.h, framework/core.
// Tested by: tests/dist/test_zero_collectives.cpp (np 1 without mpirun, np 2, np 3).
#pragma once

#include <cstdint>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/dtype.h"
#include "framework/core/memory.h"
#include "framework/dist/communicator.h"
#include "framework/dist/zero_layout.h"

namespace farthing::dist {

class ZeroCollectives {
 public:
  // layout must describe comm's world (same size, same rank); buffers are memory of comm's
  // device, and staging copies run on that device's backend. Both are kept: layout by copy, comm by reference (it must outlive this object).
  ZeroCollectives(const ZeroLayout& layout, Communicator& comm);
  // The staging buffer it holds for `layout` (0 when no unit needs one), before building one.
  static int64_t staging_bytes(const ZeroLayout& layout);

  const ZeroLayout& layout() const { return layout_; }

  // grads (f32, the global flat space) holds this rank's contribution; afterwards
  //  stage 1: every unit's aligned span holds the sum over ranks (all-reduce in place);
  //  stage 2, 3: this rank's owned ranges hold the sum (reduce-scatter); the rest of grads is
  //  unspecified.
  // Elements outside every unit's aligned span are never read or written.
  void reduce_gradients(float* grads, int stage);

  // values (the global flat space, any dtype of at most 4 bytes: bf16 weights, f32 master)
  // holds correct values in this rank's owned ranges; afterwards every rank holds every
  // owner's values in every unit's aligned span (all-gather per unit).
  void gather_owned(void* values, DType dtype);

  // Bytes this rank has sent in the collectives since construction, by the bandwidth-optimal
  // algorithms' volume (what it receives is the same amount again):
  //  all-reduce of n elements: 2 (N-1) ceil(n/N) element sizes (≈ 2 (N-1)/N · bytes; the
  //  ceiling is the zero-padding of the last block, as MpiCommunicator sends it);
  //  reduce-scatter, all-gather of P_u elements: (N-1)/N · bytes = (N-1) L_u element sizes.
  // Zero at world size 1.
  int64_t bytes_communicated() const { return bytes_communicated_; }

 private:
  void all_reduce_units(float* grads);
  void reduce_scatter_units(float* grads);
  // dst <- src, count elements of dtype, both on the communicator's device.
  void copy_elements(void* dst, const void* src, int64_t count, DType dtype);

  ZeroLayout layout_;
  Communicator& comm_;
  Device device_;
  Backend& backend_;
  Buffer staging_;  // max P_u over the units that need staging, as f32
  int64_t bytes_communicated_ = 0;
};

}  // namespace farthing::dist

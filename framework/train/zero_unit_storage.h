// zero_unit_storage.h — ZeRO-3 parameters and gradients for the model, unit by unit
// (models::UnitStorage): each rank keeps only its owned part of every unit (ZeroLayout); a unit's
// fp32 parameters are all-gathered just before the model uses it (in forward, and again in
// backward) and freed after, and its gradients are reduce-scattered into the owners as soon as
// backward has finished them, then freed; the next unit's gather starts while the current one
// computes (prefetch). So the model holds two or three units at a time instead
// of the whole model, and no full gradient buffer exists: with the optimizer step fused into
// backward, the owner steps the unit right away (torchtune's optimizer-in-backward). On one
// rank both collectives are the identity and are skipped (no buffers, no communicator thread).
//
// NOTE (numerics): the gather moves exact values (bf16 weights widened exactly, or the fp32
// master under precision fp32); the reduce-scatter sums fp32 in rank order, like stage 1's
// all-reduce, so stage 3 gives the same bits as stages 1-2 and as one process.
// Relies on: models/common/transformer.h, dist/zero_layout.h, dist/communicator.h.
// Tested by: tests/train/test_train_mpi.sh (stage 3 parity), tests/train/test_train_resume.sh.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "framework/core/memory.h"
#include "framework/dist/communicator.h"
#include "framework/dist/zero_layout.h"
#include "models/common/transformer.h"

namespace farthing::train {

class ZeroUnitStorage final : public models::UnitStorage {
 public:
  struct Sources {
    // This rank's owned part of unit u (ZeroLayout::owned(u, rank) elements): bf16 weights or
    // the fp32 master, as params_dtype says; nullptr when it owns none.
    std::function<const void*(int unit)> owned_params;
    DType params_dtype = DType::kBF16;
    // The summed gradients of this rank's owned part of unit u (fp32), once per backward.
    std::function<void(int unit, const float* owned_grads)> on_unit_grads;
  };

  ZeroUnitStorage(const dist::ZeroLayout& zero, Communicator& comm, Sources sources);

  const float* acquire_params(int unit) override;
  void release_params(int unit) override;
  // Starts the unit's all-gather (asynchronous: the communicator's worker thread moves it while
  // the model computes); acquire_params then waits for it.
  void prefetch_params(int unit) override;
  float* acquire_grads(int unit) override;
  void grads_ready(int unit) override;

  // Bytes this rank sent in the gathers and reduce-scatters so far.
  int64_t bytes_sent() const { return bytes_sent_; }

 private:
  const dist::ZeroLayout& zero_;
  Communicator& comm_;
  Sources sources_;
  // A gather in flight: its send slot, its receive buffer (the fp32 parameters when the master
  // is gathered, else bf16 to widen) and the handle.
  struct Pending {
    Buffer send, received;
    CommHandle handle;
  };
  void start_gather(int unit, Pending& pending);
  std::vector<Buffer> params_, grads_;  // per unit: the gathered fp32 parameters, the gradient accumulator
  std::vector<std::unique_ptr<Pending>> pending_;
  int64_t bytes_sent_ = 0;
};

}  // namespace farthing::train

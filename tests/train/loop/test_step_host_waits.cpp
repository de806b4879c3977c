// test_step_host_waits.cpp — how often one training step would make a GPU's host wait, and how
// often it allocates, counted on the strict device (StrictDeviceBackend::host_wait_counts: copies
// into host memory, synchronize() calls, allocate_bytes() calls).
// Inside a step nothing comes back to the host but the step's results, read at
// its end: the micro-batches' loss sums (one copy) and the optimizer's sums (finish_step, one
// copy). With the optimizer after backward, the norm, the clip factor and the non-finite skip stay
// on the device too (AdamW::step_clipped_on_device; at world size 1, where no reduction over ranks
// needs them on the host first). After the first step has sized everything, every allocation
// is served by memory freed earlier: the units' buffers and gradient accumulators come and go
// each step (ParamStore), which on CUDA the stream-ordered pool serves without the driver and
// without a wait (CudaBackend::allocate_bytes). Seen to fail: a copy of the step's sums back to the
// host after each segment's step in AdamW::step_segments (as every unit's step did before) counts
// 24 waits per step against 2 (fused); reading the norm before the step (inspect_grads, as the
// trainer did before step_clipped_on_device) 3 against 2; a 16 MiB buffer the trainer kept each
// step, 3 allocations no freed memory could serve.
// Relies on: train/loop/trainer.h, backend/strict_device_backend.h,
// tests/train/loop/trainer_test_support.h.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/backend/strict_device_backend.h"
#include "train/loop/trainer.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

StrictDeviceBackend& strict_device() { return static_cast<StrictDeviceBackend&>(backend_for(Device::strict())); }

struct Case {
  const char* name;
  bool fused;             // train.optimizer_in_backward
  int64_t grad_accum;
  int64_t allowed_waits;  // per step, after the first
};

// The counts of steps 2..4 of a run of `c` on the strict device, per step.
StrictDeviceBackend::HostWaitCounts per_step_counts(const Case& c) {
  testing::TempDir dir(std::string("host_waits_") + c.name);
  recipe::RunConfig config = testing::tiny_token_run(dir.path, 4);
  config.train.device = recipe::TrainDevice::kStrict;
  config.train.precision = recipe::Precision::kBf16;
  config.train.optimizer_in_backward = c.fused;
  config.train.grad_accum = c.grad_accum;
  if (c.fused) {
    config.train.max_grad_norm = 0.0;
    config.train.nonfinite = recipe::Nonfinite::kFail;
  } else {
    config.train.max_grad_norm = 1.0;
  }
  Trainer trainer(config, testing::world(), TrainerOutput{.progress = false});
  trainer.train_step();  // sizes everything
  const StrictDeviceBackend::HostWaitCounts before = strict_device().host_wait_counts();
  constexpr int64_t kSteps = 3;
  for (int64_t s = 0; s < kSteps; ++s) trainer.train_step();
  const StrictDeviceBackend::HostWaitCounts after = strict_device().host_wait_counts();
  StrictDeviceBackend::HostWaitCounts per_step;
  per_step.readbacks = (after.readbacks - before.readbacks) / kSteps;
  per_step.synchronizations = (after.synchronizations - before.synchronizations) / kSteps;
  per_step.allocations = (after.allocations - before.allocations) / kSteps;
  per_step.pool_growths = after.pool_growths - before.pool_growths;  // all three steps'
  EXPECT_EQ(per_step.waits() * kSteps, after.waits() - before.waits()) << c.name << ": steps differ";
  return per_step;
}

TEST(StepHostWaits, OnlyTheStepsResultsComeBackAndFreedMemoryServesEveryAllocation) {
  const Case cases[] = {
      // The loss sums and finish_step's sums, both at the step's end.
      {"fused", true, 1, 2},
      {"after_backward", false, 1, 2},  // with clipping (max_grad_norm 1)
      {"accum2", false, 2, 2},  // two micro-batches: their loss sums still come back in one copy
  };
  for (const Case& c : cases) {
    const StrictDeviceBackend::HostWaitCounts n = per_step_counts(c);
    std::printf("%-16s per step: %lld readbacks, %lld synchronizations (allowed waits %lld); %lld allocations, "
                "%lld of them in 3 steps not served by freed memory\n",
                c.name, (long long)n.readbacks, (long long)n.synchronizations, (long long)c.allowed_waits,
                (long long)n.allocations, (long long)n.pool_growths);
    EXPECT_LE(n.waits(), c.allowed_waits) << c.name << ": a host wait came back into the step";
    EXPECT_EQ(n.pool_growths, 0) << c.name << ": after the first step, an allocation freed memory could not serve";
  }
}

}  // namespace
}  // namespace farthing::train

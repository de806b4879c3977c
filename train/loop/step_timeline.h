// step_timeline.h — where a training step's time goes on this rank, as the host sees it: every
// call the model makes into its unit storage (acquire, prefetch, release, gradients ready), the
// spans this rank spent inside ZeRO's collectives (dist::TimedCommunicator), and the trainer's
// phases (each micro-batch's forward and backward, the optimizer step) and, with the optimizer
// offloaded to the host, each shard's copy out, host step and copy in. From it, measured_step splits each pass into the turns of the model's unit
// schedule and takes out the time spent in collectives: the compute that the scaling model
// (scaling_model.h) puts ZeRO's communication around.
//
// NOTE: host clocks. On the CPU the work is done when a call returns, so a gap between calls is
// compute. On a GPU the host runs ahead of the stream, and the same split needs CUDA events
// (not done: nothing here has run on a GPU). An offloaded copy out's span ends when the host has
// waited for it, so on a GPU it does cover the copy itself; a copy in's span is its issue only,
// but on CUDA every offloaded copy also carries its time on the device (OffloadSpan::device_seconds, CUDA events).
// Relies on: framework/dist/{unit_storage,timed_communicator}.h, models/common/transformer.h (UnitSchedule).
// Tested by: tests/train/plan/test_scaling_model.cpp (a scripted storage; a real Trainer's steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/dist/timed_communicator.h"
#include "framework/dist/unit_storage.h"
#include "framework/optim/host_offload.h"
#include "models/common/transformer.h"

namespace farthing::train {

enum class StoreCallKind : uint8_t { kAcquire, kAcquireBf16, kPrefetch, kRelease, kAcquireGrads, kGradsReady, kBackwardDone };

struct StoreCall {
  StoreCallKind kind = StoreCallKind::kAcquire;
  int unit = 0;
  double begin = 0.0, end = 0.0;  // seconds on the timeline's clock
};

// One forward+backward pass (a micro-batch): its interval and its calls [first_call, end_call).
struct PassSpan {
  double begin = 0.0, end = 0.0;
  size_t first_call = 0, end_call = 0;
};

// One step's record. The trainer fills it when TrainerOutput::timeline is set.
struct StepTimeline {
  double begin = 0.0, end = 0.0;
  std::vector<StoreCall> calls;
  std::vector<PassSpan> passes;
  std::vector<dist::TimeSpan> comm_spans;  // inside the store's communicator (ZeRO's collectives)
  double optimizer_begin = 0.0, optimizer_end = 0.0;  // inspect + step (unfused), or finish_step (fused)
  // optimizer.offload: host: each shard's copy out, host step (on the worker thread), the wait
  // for it and its copy in, as the ring recorded them (reported at the optimizer's finish_step).
  std::vector<optim::OffloadSpan> offload_spans;

  void clear() { *this = StepTimeline{}; }
  static double now() { return dist::steady_seconds(); }
};

// A UnitStorage that forwards every call to `inner` and records it in `timeline`.
class TimedUnitStorage final : public dist::UnitStorage {
 public:
  TimedUnitStorage(dist::UnitStorage& inner, StepTimeline& timeline) : inner_(inner), timeline_(timeline) {}
  const float* acquire_params(int unit) override;
  const uint16_t* acquire_bf16_params(int unit) override;
  void release_params(int unit) override;
  void prefetch_params(int unit) override;
  UnitGrads acquire_grads(int unit, GradAdds adds) override;
  void grads_ready(int unit) override;
  void backward_done() override;

 private:
  template <class F>
  auto timed(StoreCallKind kind, int unit, F&& call);
  dist::UnitStorage& inner_;
  StepTimeline& timeline_;
};

// A step's compute on one rank, turn by turn: what the scaling model works from.
struct StepCompute {
  std::vector<double> turn_seconds;  // one pass, per turn of the unit schedule (averaged over passes)
  int64_t passes = 1;                // passes per step (grad_accum)
  double optimizer_seconds = 0.0;    // the unfused optimizer step of `optimizer_elems` owned elements
  int64_t optimizer_elems = 0;
  double other_seconds = 0.0;  // the rest of the step: batches, the loss's all-reduces, bookkeeping
};

// What a recorded step measured: its compute (collectives' time taken out) and its communication.
struct MeasuredStep {
  StepCompute compute;
  double step_seconds = 0.0;
  double comm_seconds = 0.0;  // inside ZeRO's collectives (the passes' and the publication's)
};

// Splits each pass of `timeline` into the turns of `schedule` (a turn runs from its acquire to
// the next turn's; the embedding's last turn, which acquires nothing, from the end of the
// previous turn's grads_ready) and subtracts the time spent inside collectives. Throws when the
// calls do not follow the schedule.
MeasuredStep measured_step(const models::UnitSchedule& schedule, const StepTimeline& timeline, int64_t optimizer_elems);

}  // namespace farthing::train

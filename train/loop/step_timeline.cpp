#include "train/loop/step_timeline.h"

#include <algorithm>

#include "framework/core/error.h"

namespace farthing::train {

template <class F>
auto TimedUnitStorage::timed(StoreCallKind kind, int unit, F&& call) {
  StoreCall record{.kind = kind, .unit = unit, .begin = StepTimeline::now()};
  if constexpr (std::is_void_v<decltype(call())>) {
    call();
    record.end = StepTimeline::now();
    timeline_.calls.push_back(record);
  } else {
    auto result = call();
    record.end = StepTimeline::now();
    timeline_.calls.push_back(record);
    return result;
  }
}

const float* TimedUnitStorage::acquire_params(int unit) {
  return timed(StoreCallKind::kAcquire, unit, [&] { return inner_.acquire_params(unit); });
}
const uint16_t* TimedUnitStorage::acquire_bf16_params(int unit) {
  return timed(StoreCallKind::kAcquireBf16, unit, [&] { return inner_.acquire_bf16_params(unit); });
}
void TimedUnitStorage::release_params(int unit) {
  timed(StoreCallKind::kRelease, unit, [&] { inner_.release_params(unit); });
}
void TimedUnitStorage::prefetch_params(int unit) {
  timed(StoreCallKind::kPrefetch, unit, [&] { inner_.prefetch_params(unit); });
}
TimedUnitStorage::UnitGrads TimedUnitStorage::acquire_grads(int unit, GradAdds adds) {
  return timed(StoreCallKind::kAcquireGrads, unit, [&] { return inner_.acquire_grads(unit, adds); });
}
void TimedUnitStorage::grads_ready(int unit) {
  timed(StoreCallKind::kGradsReady, unit, [&] { inner_.grads_ready(unit); });
}
void TimedUnitStorage::backward_done() {
  timed(StoreCallKind::kBackwardDone, -1, [&] { inner_.backward_done(); });
}

namespace {

bool is_acquire(const StoreCall& c) { return c.kind == StoreCallKind::kAcquire || c.kind == StoreCallKind::kAcquireBf16; }

// Where each turn of one pass begins, on the timeline's clock; the pass's end closes the last.
std::vector<double> turn_starts(const models::UnitSchedule& schedule, const StepTimeline& t, const PassSpan& pass) {
  std::vector<double> starts;
  size_t next = pass.first_call;
  for (size_t k = 0; k < schedule.turns.size(); ++k) {
    const models::UnitTurn& turn = schedule.turns[k];
    if (turn.acquires) {
      while (next < pass.end_call && !is_acquire(t.calls[next])) ++next;
      FARTHING_CHECK(next < pass.end_call && t.calls[next].unit == turn.unit, "step timeline: turn ", k,
                     " should acquire unit ", turn.unit, " but the pass's calls do not follow the unit schedule");
      starts.push_back(k == 0 ? pass.begin : t.calls[next].begin);
      ++next;
    } else {  // begins where the previous turn handed its gradients over
      FARTHING_CHECK(k > 0, "step timeline: the first turn must acquire its unit");
      const int previous = schedule.turns[k - 1].unit;
      while (next < pass.end_call && !(t.calls[next].kind == StoreCallKind::kGradsReady && t.calls[next].unit == previous)) {
        ++next;
      }
      FARTHING_CHECK(next < pass.end_call, "step timeline: turn ", k, " follows unit ", previous,
                     "'s gradients, which the pass never hands over");
      starts.push_back(t.calls[next].end);
      ++next;
    }
  }
  return starts;
}

// Seconds of [begin, end) spent inside collectives.
double in_collectives(const StepTimeline& t, double begin, double end) {
  double inside = 0.0;
  for (const dist::TimeSpan& c : t.comm_spans) inside += std::max(0.0, std::min(c.end, end) - std::max(c.begin, begin));
  return inside;
}

}  // namespace

MeasuredStep measured_step(const models::UnitSchedule& schedule, const StepTimeline& timeline, int64_t optimizer_elems) {
  FARTHING_CHECK(!timeline.passes.empty(), "step timeline: no pass was recorded");
  MeasuredStep m;
  StepCompute& c = m.compute;
  c.passes = int64_t(timeline.passes.size());
  c.turn_seconds.assign(schedule.turns.size(), 0.0);
  double in_passes = 0.0;
  for (const PassSpan& pass : timeline.passes) {
    const std::vector<double> starts = turn_starts(schedule, timeline, pass);
    for (size_t k = 0; k < starts.size(); ++k) {
      const double end = k + 1 < starts.size() ? starts[k + 1] : pass.end;
      c.turn_seconds[k] += (end - starts[k] - in_collectives(timeline, starts[k], end)) / double(c.passes);
    }
    in_passes += pass.end - pass.begin;
  }
  c.optimizer_seconds = timeline.optimizer_end - timeline.optimizer_begin;
  c.optimizer_elems = optimizer_elems;
  m.step_seconds = timeline.end - timeline.begin;
  m.comm_seconds = in_collectives(timeline, timeline.begin, timeline.end);
  double comm_in_passes = 0.0;
  for (const PassSpan& pass : timeline.passes) comm_in_passes += in_collectives(timeline, pass.begin, pass.end);
  // The rest: batches, the loss's all-reduces, the publication's own copies.
  c.other_seconds = std::max(0.0, m.step_seconds - in_passes - c.optimizer_seconds - (m.comm_seconds - comm_in_passes));
  return m;
}

}  // namespace farthing::train

// step_profile.cpp — see step_profile.h.
#include "train/loop/step_profile.h"

#include <algorithm>

namespace farthing::train {

namespace {

void add_gap(std::vector<IdleGap>& gaps, IdleGap gap) {
  gaps.push_back(std::move(gap));
  std::stable_sort(gaps.begin(), gaps.end(), [](const IdleGap& a, const IdleGap& b) { return a.seconds > b.seconds; });
  if (gaps.size() > StepProfileTotals::kLargestGaps) gaps.resize(StepProfileTotals::kLargestGaps);
}

}  // namespace

void StepProfileTotals::add(const StepOpProfile& step, int64_t step_number) {
  ++steps;
  wall_seconds += step.wall_seconds;
  busy_seconds += step.busy_seconds;
  idle_seconds += step.idle_seconds;
  counters.op_calls += step.counters.op_calls;
  counters.copies_to_device += step.counters.copies_to_device;
  counters.copies_to_host += step.counters.copies_to_host;
  counters.synchronizations += step.counters.synchronizations;
  counters.allocations += step.counters.allocations;
  double previous_end = 0.0;
  const char* previous_kind = "(step start)";
  for (const OpSpan& span : step.spans) {
    phase_seconds[size_t(span.phase)] += span.end - span.begin;
    auto it = std::find_if(ops.begin(), ops.end(),
                           [&](const OpKindTotals& o) { return o.phase == span.phase && o.kind == span.kind; });
    if (it == ops.end()) it = ops.insert(ops.end(), OpKindTotals{.kind = span.kind, .phase = span.phase});
    ++it->calls;
    it->seconds += span.end - span.begin;
    it->flops += span.flops;
    add_gap(largest_gaps, IdleGap{.seconds = span.begin - previous_end, .after = previous_kind, .before = span.kind,
                                  .phase = span.phase, .step = step_number});
    previous_end = span.end;
    previous_kind = span.kind;
  }
  add_gap(largest_gaps, IdleGap{.seconds = step.wall_seconds - previous_end, .after = previous_kind,
                                .before = "(step end)",
                                .phase = step.spans.empty() ? OpPhase::kOther : step.spans.back().phase,
                                .step = step_number});
}

void RunStepProfile::add(const StepOpProfile& step, int64_t step_number) {
  (first_step.steps == 0 ? first_step : steady).add(step, step_number);
}

}  // namespace farthing::train

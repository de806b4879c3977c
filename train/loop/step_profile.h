// step_profile.h — a run's step profiles (train.profile: ops; framework/backend/op_profiler.h),
// summed over its steady steps: every step after the run's first, which also sizes buffers,
// plans GEMMs and loads libraries, and is kept apart.
// What is summed: wall, busy and idle time; each phase's busy time; each op kind's calls and time
// per phase; the host counters; and the largest idle gaps, each with the ops on either side, so
// a stall is found where it happens. The table and profile.json, with each op's roofline time
// beside it, are train/plan/step_profile_report.h's.
// Relies on: framework/backend/op_profiler.h. Tested by: tests/train/loop/test_step_profile.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/backend/op_profiler.h"
#include "kernels/numerics/gemm_plan_book.h"

namespace farthing::train {

struct OpKindTotals {
  std::string kind;
  OpPhase phase = OpPhase::kOther;
  int64_t calls = 0;
  double seconds = 0.0, flops = 0.0;
};

// Time between two recorded calls (or between a step's bounds and its first or last call).
struct IdleGap {
  double seconds = 0.0;
  std::string after, before;  // the kinds on either side; "(step start)" / "(step end)" at the bounds
  OpPhase phase = OpPhase::kOther;  // of the call after the gap (the step's last call's at the end)
  int64_t step = 0;                 // the run's step number
};

struct StepProfileTotals {
  int64_t steps = 0;
  double wall_seconds = 0.0, busy_seconds = 0.0, idle_seconds = 0.0;
  std::array<double, kOpPhaseCount> phase_seconds{};
  std::vector<OpKindTotals> ops;      // one entry per (kind, phase), in first-seen order
  HostOpCounters counters;            // summed over the steps
  std::vector<IdleGap> largest_gaps;  // the kLargestGaps largest, largest first

  static constexpr size_t kLargestGaps = 8;
  void add(const StepOpProfile& step, int64_t step_number);
};

// A run's profile: its first step, and the steps after it; on a GPU, every GEMM plan's record.
struct RunStepProfile {
  StepProfileTotals first_step, steady;
  std::vector<kernels::GemmPlanRecord> gemm_plans;
  void add(const StepOpProfile& step, int64_t step_number);
};

}  // namespace farthing::train

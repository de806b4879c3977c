// op_profiler.cpp — see op_profiler.h.
#include "framework/backend/op_profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>

#include "framework/core/error.h"

namespace farthing {

const char* op_phase_name(OpPhase phase) {
  switch (phase) {
    case OpPhase::kForward: return "forward";
    case OpPhase::kRecompute: return "recompute";
    case OpPhase::kHeadLoss: return "head and loss";
    case OpPhase::kBackward: return "backward";
    case OpPhase::kGradients: return "gradient bookkeeping";
    case OpPhase::kOptimizer: return "optimizer";
    case OpPhase::kCommunication: return "communication";
    case OpPhase::kOther: return "other";
  }
  return "other";
}

uint32_t HostOpClock::mark() {
  seconds_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  return uint32_t(seconds_.size() - 1);
}

std::vector<double> HostOpClock::collect() {
  if (wait_) wait_();
  std::vector<double> times = std::move(seconds_);
  seconds_.clear();
  const double origin = times.empty() ? 0.0 : times.front();
  for (double& t : times) t -= origin;
  return times;
}

OpProfiler::OpProfiler(std::unique_ptr<OpClock> clock) : clock_(std::move(clock)) {}

void OpProfiler::begin_step() {
  FARTHING_CHECK(!recording_, "OpProfiler::begin_step: the previous step was not ended");
  thread_ = std::this_thread::get_id();
  recording_ = true;
  depth_ = 0;
  phase_ = OpPhase::kOther;
  pending_.clear();
  counters_ = HostOpCounters{};
  step_begin_mark_ = clock_->mark();
}

OpProfiler::Entry OpProfiler::enter() {
  if (!recording()) return {};
  ++counters_.op_calls;
  if (depth_++ > 0) return {};
  return Entry{.outermost = true, .begin_mark = clock_->mark()};
}

void OpProfiler::leave(const Entry& entry, const char* kind, double flops, bool communication) {
  if (!recording()) return;
  --depth_;
  if (!entry.outermost) return;
  pending_.push_back(PendingSpan{kind, communication ? OpPhase::kCommunication : phase_, entry.begin_mark,
                                 clock_->mark(), flops});
}

StepOpProfile OpProfiler::end_step() {
  FARTHING_CHECK(recording_, "OpProfiler::end_step without begin_step");
  const uint32_t step_end_mark = clock_->mark();
  recording_ = false;
  const std::vector<double> t = clock_->collect();
  StepOpProfile profile;
  profile.counters = counters_;
  profile.wall_seconds = t[step_end_mark] - t[step_begin_mark_];
  double previous_end = t[step_begin_mark_];
  for (const PendingSpan& p : pending_) {
    const OpSpan span{.kind = p.kind, .phase = p.phase, .begin = t[p.begin_mark] - t[step_begin_mark_],
                      .end = t[p.end_mark] - t[step_begin_mark_], .flops = p.flops};
    profile.busy_seconds += span.end - span.begin;
    profile.idle_seconds += std::max(0.0, t[p.begin_mark] - previous_end);  // spans never overlap: see the test
    previous_end = t[p.end_mark];
    profile.spans.push_back(span);
  }
  profile.idle_seconds += std::max(0.0, t[step_end_mark] - previous_end);
  pending_.clear();
  return profile;
}

namespace {
std::atomic<OpProfiler*> g_active_profiler{nullptr};
}  // namespace

OpProfiler* active_op_profiler() { return g_active_profiler.load(std::memory_order_relaxed); }
void set_active_op_profiler(OpProfiler* profiler) { g_active_profiler.store(profiler, std::memory_order_relaxed); }

}  // namespace farthing

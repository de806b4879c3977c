// lr_schedule.cpp — see lr_schedule.h.
#include "framework/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"

namespace farthing::optim {

LrScheduleKind parse_lr_schedule_kind(std::string_view name) {
  for (const auto& [kind, kind_name] : kLrScheduleKindNames) {
    if (kind_name == name) return kind;
  }
  if (name == "linear_decay") return LrScheduleKind::kLinearDecay;
  FARTHING_FAIL("unknown lr schedule '", name, "'; use one of: constant, linear_warmup, cosine, linear");
}

void validate_lr_schedule(const LrSchedule& s) {
  FARTHING_CHECK(s.warmup_steps >= 0, "lr schedule: warmup_steps (", s.warmup_steps, ") must be >= 0");
  FARTHING_CHECK(s.min_ratio >= 0.0 && s.min_ratio <= 1.0, "lr schedule: min_ratio (", s.min_ratio,
                 ") must lie in [0, 1]");
  if (s.kind == LrScheduleKind::kCosine || s.kind == LrScheduleKind::kLinearDecay) {
    FARTHING_CHECK(s.total_steps > s.warmup_steps, "lr schedule: total_steps (", s.total_steps,
                   ") must exceed warmup_steps (", s.warmup_steps, ") for a decaying schedule");
  }
}

double lr_multiplier(const LrSchedule& s, int64_t step) {
  FARTHING_CHECK(step >= 1, "lr schedule: steps count from 1, got ", step);
  if (s.kind == LrScheduleKind::kConstant) return 1.0;
  if (step <= s.warmup_steps) return double(step) / double(s.warmup_steps);
  if (s.kind == LrScheduleKind::kLinearWarmup) return 1.0;
  const double progress =
      std::min(1.0, double(step - s.warmup_steps) / double(s.total_steps - s.warmup_steps));
  const double shape = s.kind == LrScheduleKind::kCosine ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return s.min_ratio + (1.0 - s.min_ratio) * shape;
}

}  // namespace farthing::optim

// lr_schedule.h — learning-rate schedules as a multiplier of each group's base lr.
//
// lr(step) = group.lr * lr_multiplier(schedule, step), step counting from 1 (the step about
// to be taken), as torch's LambdaLR would with the same lambda. Kinds: constant; linear warmup
// then constant; cosine with linear warmup (to min_ratio at total_steps); linear warmup then
// linear decay (to min_ratio at total_steps), as HF transformers' get_*_schedule_with_warmup.
// Relies on: core/error.h. Tested by: tests/optim/test_optim_config.cpp (LrSchedule.Shapes).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace farthing::optim {

enum class LrScheduleKind : uint8_t { kConstant, kLinearWarmup, kCosine, kLinearDecay };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;   // cosine and linear decay: the step where the multiplier reaches min_ratio
  double min_ratio = 0.0;    // the final multiplier (torchtune/llm.c style floor)
};

// The names a recipe spells them by (schedule.kind), in the order its errors list them: the one
// table (recipe/run_config.h reads it).
inline constexpr std::array<std::pair<LrScheduleKind, std::string_view>, 4> kLrScheduleKindNames{{
    {LrScheduleKind::kConstant, "constant"},
    {LrScheduleKind::kLinearWarmup, "linear_warmup"},
    {LrScheduleKind::kCosine, "cosine"},
    {LrScheduleKind::kLinearDecay, "linear"}}};

LrScheduleKind parse_lr_schedule_kind(std::string_view name);  // the names above, or linear_decay
void validate_lr_schedule(const LrSchedule& schedule);          // throws naming the bad field
double lr_multiplier(const LrSchedule& schedule, int64_t step);

}  // namespace farthing::optim

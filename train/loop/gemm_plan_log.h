// gemm_plan_log.h — one line per GEMM plan for the run's log (the CUDA GEMMs' records,
// kernels/numerics/gemm_plan_book.h): what the GEMM is, the algorithm it runs, the rate it reached
// when timed at planning, and under train.gemm_algorithm timed every candidate's rate.
// Relies on: kernels/numerics/gemm_plan_book.h. Tested by: tests/train/loop/test_gemm_plan_checkpoint.cpp.
#pragma once

#include <string>

#include "kernels/numerics/gemm_plan_book.h"

namespace farthing::train {

// "gemm plan KEY: ALGORITHM, R TFLOP/s (candidates' TFLOP/s: a b ...; HOW)", with "not timed"
// for a rate of 0 and "failed" for a candidate that did not run.
std::string gemm_plan_record_line(const kernels::GemmPlanRecord& record);

}  // namespace farthing::train

// gemm_plan_log.cpp — see gemm_plan_log.h.
#include "train/loop/gemm_plan_log.h"

#include <cstdio>

namespace farthing::train {

namespace {

std::string rate(double tflops, const char* zero) {
  if (tflops <= 0.0) return zero;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", tflops);
  return text;
}

}  // namespace

std::string gemm_plan_record_line(const kernels::GemmPlanRecord& record) {
  std::string line = "gemm plan " + record.key + ": " + record.algorithm + ", ";
  line += record.tflops > 0.0 ? rate(record.tflops, "") + " TFLOP/s" : std::string("not timed");
  line += " (";
  if (!record.candidate_tflops.empty()) {
    line += "candidates' TFLOP/s:";
    for (const double c : record.candidate_tflops) line += " " + rate(c, "failed");
    line += "; ";
  }
  return line + record.how + ")";
}

}  // namespace farthing::train

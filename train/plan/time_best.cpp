// time_best.cpp — see time_best.h.
#include "train/plan/time_best.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace farthing::train {

double time_best(const std::function<void()>& queue, const std::function<void()>& wait, double min_seconds,
                 const std::function<double()>& clock) {
  const auto now = [&clock] {
    if (clock) return clock();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  queue();
  wait();
  double best = std::numeric_limits<double>::infinity(), spent = 0.0;
  int64_t batch = 1;
  for (int runs = 0; (runs < 3 || spent < min_seconds) && runs < 200; ++runs) {
    const double t0 = now();
    for (int64_t i = 0; i < batch; ++i) queue();
    wait();
    const double s = now() - t0;
    best = std::min(best, s / double(batch));
    spent += s;
    if (s < 2e-3 && batch < (int64_t(1) << 16)) batch *= 2;
  }
  return best;
}

}  // namespace farthing::train

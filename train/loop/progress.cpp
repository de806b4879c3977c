// progress.cpp — see progress.h.
#include "train/loop/progress.h"

#include <unistd.h>

#include <cmath>

namespace farthing::train {

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int u = 0;
  while (value >= 1024.0 && u < 4) {
    value /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", value, units[u]);
  return text;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = int64_t(std::llround(seconds));
  char text[32];
  if (s >= 3600) std::snprintf(text, sizeof text, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  else if (s >= 60) std::snprintf(text, sizeof text, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else std::snprintf(text, sizeof text, "%llds", (long long)s);
  return text;
}

ProgressLine::ProgressLine(bool enabled, FILE* out)
    : enabled_(enabled), out_(out), terminal_(enabled && isatty(fileno(out)) == 1) {}

ProgressLine::~ProgressLine() {
  if (enabled_ && line_open_) std::fputc('\n', out_);
}

void ProgressLine::update(const ProgressUpdate& u) {
  if (!enabled_) return;
  char line[256], mfu[32] = "";
  if (u.mfu > 0) std::snprintf(mfu, sizeof mfu, " (MFU %.1f%%)", 100.0 * u.mfu);
  std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.3g | grad norm %.3g | %.0f tok/s%s | ETA %s | mem %s%s",
                (long long)u.step, (long long)u.total_steps, u.loss, u.lr, u.grad_norm, u.tokens_per_s, mfu,
                format_duration(u.eta_seconds).c_str(), format_bytes(u.peak_mem_bytes).c_str(),
                u.skipped ? " | skipped (non-finite gradients)" : "");
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s", line);
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n", line);
  }
  std::fflush(out_);
}

void ProgressLine::note(const std::string& text) {
  if (!enabled_) return;
  if (line_open_) std::fputc('\n', out_);
  line_open_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace farthing::train

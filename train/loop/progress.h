// progress.h — the line a human watches while training: step, loss, lr, tokens/s, ETA and peak
// memory. On a terminal the line rewrites itself in place (carriage return); when stdout is a
// file or a pipe (CI, nohup, mpirun's forwarding) each update is a plain line, so logs stay
// readable. Only rank 0 prints.
// Relies on: <cstdio>, POSIX isatty. Tested by: tests/cli/ (plain-line form).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace farthing::train {

struct ProgressUpdate {
  int64_t step = 0, total_steps = 0;
  double loss = 0.0, lr = 0.0, grad_norm = 0.0;
  double tokens_per_s = 0.0;
  double eta_seconds = 0.0;
  int64_t peak_mem_bytes = 0;
  double mfu = 0.0;      // model FLOPs over the device's dense bf16 peak; 0: no peak to quote (CPUs)
  bool skipped = false;  // non-finite gradients: the step was skipped
};

// "1.2 GiB", "340 MiB", "12 KiB"
std::string format_bytes(int64_t bytes);
// "1h02m", "3m05s", "42s"
std::string format_duration(double seconds);

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled, FILE* out = stdout);
  ~ProgressLine();  // ends an in-place line with a newline
  void update(const ProgressUpdate& u);
  // A line of its own (evaluation results, saves), never overwritten.
  void note(const std::string& text);

 private:
  bool enabled_;
  FILE* out_;
  bool terminal_;
  bool line_open_ = false;
};

}  // namespace farthing::train

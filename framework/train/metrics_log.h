// metrics_log.h — the run's metrics.jsonl: one JSON object per line, appended and flushed per
// record so a crash loses at most the line being written (ARCHITECTURE.md §5).
//
// Training records carry at least step, loss, lr, grad_norm, tokens, tokens_per_s,
// peak_mem_bytes; evaluation records carry step and eval_loss. On resume the log is cut back
// to the records of steps <= the checkpoint's step, so a resumed run's log equals the
// uninterrupted run's.
// Relies on: nlohmann/json. Tested by: tests/train/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace farthing::train {

class MetricsLog {
 public:
  // Opens path for appending (creating it), after dropping records with "step" > keep_through_step
  // (pass -1 to start a fresh log). Only rank 0 writes; other ranks pass enabled = false.
  MetricsLog(std::filesystem::path path, int64_t keep_through_step, bool enabled = true);

  void append(const nlohmann::json& record);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  bool enabled_;
};

}  // namespace farthing::train

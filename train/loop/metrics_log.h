// metrics_log.h — the run's metrics.jsonl: one JSON object per line, appended and flushed per
// record so a crash loses at most the line being written (docs/design.md §5).
//
// Training records carry at least step, loss, lr, grad_norm, tokens, tokens_per_s,
// peak_mem_bytes; evaluation records carry step and eval_loss. On resume the log is cut back
// to the records of steps <= the checkpoint's step, so a resumed run's log equals the
// uninterrupted run's.
//
// With tensorboard on, every record also goes to a TensorBoard event file in the same directory
// (tensorboard_writer.h), as scalars under the tags of kTensorBoardTags; a resumed run starts a
// new file whose SessionLog START makes TensorBoard drop the earlier files' steps > the checkpoint's.
// Relies on: nlohmann/json, tensorboard_writer.h. Tested by: tests/train/loop/ (test_train_tensorboard.sh
// runs tools/goldens/check_tensorboard.py, which reads the event files with TensorBoard itself).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

namespace farthing::train {

class TensorBoardWriter;

// metrics.jsonl key -> TensorBoard tag. Keys absent from a record are not written.
struct TensorBoardTag {
  std::string_view key, tag;
};
inline constexpr TensorBoardTag kTensorBoardTags[] = {
    {"loss", "train/loss"},
    {"eval_loss", "eval/loss"},
    {"lr", "train/lr"},
    {"grad_norm", "train/grad_norm"},
    {"unchanged_fraction", "train/unchanged_weight_fraction"},
    {"loss_scale", "train/loss_scale"},
    {"tokens_per_s", "perf/tokens_per_s"},
    {"mfu", "perf/mfu"},
    {"step_seconds", "perf/step_seconds"},
    {"peak_mem_bytes", "perf/peak_mem_bytes"},
};

class MetricsLog {
 public:
  // Opens path for appending (creating it), after dropping records with "step" > keep_through_step
  // (pass -1 to start a fresh log). Only rank 0 writes; other ranks pass enabled = false.
  // tensorboard: also write an event file beside it.
  MetricsLog(std::filesystem::path path, int64_t keep_through_step, bool enabled = true, bool tensorboard = false);
  ~MetricsLog();

  void append(const nlohmann::json& record);
  const std::filesystem::path& path() const { return path_; }
  // The event file ("" when tensorboard is off or on ranks other than 0).
  std::filesystem::path tensorboard_path() const;

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  bool enabled_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

}  // namespace farthing::train

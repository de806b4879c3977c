// metrics_log.cpp — see metrics_log.h.
#include "train/loop/metrics_log.h"

#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "train/loop/tensorboard_writer.h"

namespace farthing::train {

MetricsLog::MetricsLog(std::filesystem::path path, int64_t keep_through_step, bool enabled, bool tensorboard)
    : path_(std::move(path)), enabled_(enabled) {
  if (!enabled_) return;
  std::vector<std::string> kept;
  if (keep_through_step >= 0 && std::filesystem::exists(path_)) {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      // A torn last line (crash mid-write) does not parse: drop it with the records after K.
      const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_discarded() || !record.contains("step")) continue;
      if (record["step"].get<int64_t>() <= keep_through_step) kept.push_back(line);
    }
  }
  out_.open(path_, std::ios::out | std::ios::trunc);
  FARTHING_CHECK(out_.good(), "cannot write the metrics log ", path_.string(),
                 "; check that the run directory exists and is writable");
  for (const std::string& line : kept) out_ << line << '\n';
  out_.flush();
  if (tensorboard) {
    tensorboard_ = std::make_unique<TensorBoardWriter>(path_.parent_path().empty() ? "." : path_.parent_path());
    if (keep_through_step >= 0) tensorboard_->session_start(keep_through_step + 1);
  }
}

MetricsLog::~MetricsLog() = default;

std::filesystem::path MetricsLog::tensorboard_path() const {
  return tensorboard_ ? tensorboard_->path() : std::filesystem::path();
}

void MetricsLog::append(const nlohmann::json& record) {
  if (!enabled_) return;
  out_ << record.dump() << '\n';
  out_.flush();
  FARTHING_CHECK(out_.good(), "writing the metrics log ", path_.string(), " failed (disk full?)");
  if (!tensorboard_ || !record.contains("step")) return;
  std::vector<std::pair<std::string, float>> scalars;
  for (const TensorBoardTag& t : kTensorBoardTags) {
    const auto it = record.find(std::string(t.key));
    if (it != record.end() && it->is_number()) scalars.emplace_back(std::string(t.tag), it->get<float>());
  }
  if (!scalars.empty()) tensorboard_->scalars(record["step"].get<int64_t>(), scalars);
}

}  // namespace farthing::train

// metrics_log.cpp — see metrics_log.h.
#include "framework/train/metrics_log.h"

#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"

namespace farthing::train {

MetricsLog::MetricsLog(std::filesystem::path path, int64_t keep_through_step, bool enabled)
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
}

void MetricsLog::append(const nlohmann::json& record) {
  if (!enabled_) return;
  out_ << record.dump() << '\n';
  out_.flush();
  FARTHING_CHECK(out_.good(), "writing the metrics log ", path_.string(), " failed (disk full?)");
}

}  // namespace farthing::train

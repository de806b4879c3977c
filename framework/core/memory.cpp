// memory.cpp — see memory.h: the per-device trackers.
#include "framework/core/memory.h"

#include <map>
#include <memory>
#include <mutex>


namespace farthing {

std::string_view memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kWeights: return "weights";
    case MemoryCategory::kGrads: return "grads";
    case MemoryCategory::kMaster: return "master";
    case MemoryCategory::kOptimizerState: return "optimizer_state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommBuffers: return "comm_buffers";
    case MemoryCategory::kOther: return "other";
  }
  return "?";
}

static void raise_peak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void MemoryTracker::on_allocate(MemoryCategory category, int64_t bytes) {
  const auto c = size_t(category);
  raise_peak(peak_[c], current_[c].fetch_add(bytes) + bytes);
  raise_peak(total_peak_, total_current_.fetch_add(bytes) + bytes);
}

void MemoryTracker::on_free(MemoryCategory category, int64_t bytes) {
  current_[size_t(category)].fetch_sub(bytes);
  total_current_.fetch_sub(bytes);
}

void MemoryTracker::reset_peaks() {
  for (size_t c = 0; c < current_.size(); ++c) peak_[c].store(current_[c].load());
  total_peak_.store(total_current_.load());
}

MemorySnapshot MemoryTracker::snapshot() const {
  MemorySnapshot s;
  for (size_t c = 0; c < current_.size(); ++c) {
    s.current_bytes[c] = current_[c].load();
    s.peak_bytes[c] = peak_[c].load();
  }
  s.total_current_bytes = total_current_.load();
  s.total_peak_bytes = total_peak_.load();
  return s;
}

MemoryTracker& memory_tracker(Device device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<MemoryTracker>> trackers;
  std::lock_guard lock(mutex);
  auto& slot = trackers[{int(device.kind), device.index}];
  if (!slot) slot = std::make_unique<MemoryTracker>();
  return *slot;
}

}  // namespace farthing

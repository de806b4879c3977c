// memory.h — every allocation goes through one allocator that counts bytes by category.
//
// The tracker keeps current and peak bytes per device and per category, so `farthing plan`
// predictions can be checked against what a run really held. Buffers (backend/buffer.h) own
// their memory (RAII) and carry the category they were charged to.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "framework/core/device.h"
#include "framework/core/tensor.h"

namespace farthing {

enum class MemoryCategory : uint8_t {
  kWeights, kGrads, kMaster, kOptimizerState, kActivations, kCommBuffers, kOther,
};
inline constexpr int kNumMemoryCategories = 7;
std::string_view memory_category_name(MemoryCategory category);

struct MemorySnapshot {
  std::array<int64_t, kNumMemoryCategories> current_bytes{};
  std::array<int64_t, kNumMemoryCategories> peak_bytes{};  // peak of each category alone
  int64_t total_current_bytes = 0;
  int64_t total_peak_bytes = 0;  // peak of the sum, not the sum of peaks
};

// Counts bytes for one device. Thread-safe.
class MemoryTracker {
 public:
  void on_allocate(MemoryCategory category, int64_t bytes);
  void on_free(MemoryCategory category, int64_t bytes);
  void reset_peaks();
  MemorySnapshot snapshot() const;

 private:
  std::array<std::atomic<int64_t>, kNumMemoryCategories> current_{};
  std::array<std::atomic<int64_t>, kNumMemoryCategories> peak_{};
  std::atomic<int64_t> total_current_{0};
  std::atomic<int64_t> total_peak_{0};
};

// The tracker of a device (one per CUDA device, one for the host).
MemoryTracker& memory_tracker(Device device);

}  // namespace farthing

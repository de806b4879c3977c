// test_collective_watchdog.cpp — CollectiveWatchdog on the CPU, with polls standing in for device
// ops: an op that finishes is dropped unreported; one still running past the timeout is
// reported with the collective's timeout message; a poll's error is reported at once; a timeout
// of 0 never fires; set_timeout applies to ops handed over afterwards. The default report
// (abort_job under mpirun) is tests/dist/test_fault.sh's watchdog mode.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/dist/collective_watchdog.h"

namespace farthing::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The failures a watchdog reported, in order.
struct Reports {
  std::mutex mutex;
  std::vector<std::string> messages;
  CollectiveWatchdog::OnFailure handler() {
    return [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(message);
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages;
  }
};

// Waits (up to 10 s) until `done` holds; false if it never did.
template <class Done>
bool eventually(Done done) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

float g_buffer[8];
const Tensor kEight(g_buffer, DType::kF32, Shape{8});

TEST(CollectiveWatchdog, AFinishedOpIsDroppedUnreported) {
  Reports reports;
  CollectiveWatchdog watchdog(5.0, reports.handler());
  std::atomic<int> polls{0};
  watchdog.watch([&] { return ++polls >= 3; }, CollectiveName("all_reduce", kEight), 7);
  ASSERT_TRUE(eventually([&] { return watchdog.watched() == 0; }));
  EXPECT_GE(polls.load(), 3);
  EXPECT_TRUE(reports.seen().empty());
}

TEST(CollectiveWatchdog, AnOpPastTheTimeoutIsReportedByName) {
  Reports reports;
  CollectiveWatchdog watchdog(0.05, reports.handler());
  const auto handed_over = Clock::now();
  watchdog.watch([] { return false; }, CollectiveName("reduce_scatter", kEight), 12);
  ASSERT_TRUE(eventually([&] { return !reports.seen().empty(); }));
  const double waited = std::chrono::duration<double>(Clock::now() - handed_over).count();
  EXPECT_GE(waited, 0.05) << "reported before its timeout";
  const std::vector<std::string> seen = reports.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], collective_timeout_message(CollectiveName("reduce_scatter", kEight), 12, 0.05));
  EXPECT_NE(seen[0].find("reduce_scatter of 8 f32 (collective #12"), std::string::npos) << seen[0];
  EXPECT_TRUE(eventually([&] { return watchdog.watched() == 0; }));
}

TEST(CollectiveWatchdog, APollsErrorIsReportedAtOnce) {
  Reports reports;
  CollectiveWatchdog watchdog(0.0, reports.handler());  // no time limit: errors still end the job
  watchdog.watch([]() -> bool { FARTHING_FAIL("NCCL error: remote process exited"); },
                 CollectiveName("all_gather", kEight), 3);
  ASSERT_TRUE(eventually([&] { return !reports.seen().empty(); }));
  EXPECT_EQ(reports.seen().at(0), "NCCL error: remote process exited");
}

TEST(CollectiveWatchdog, NoTimeoutNeverFires) {
  Reports reports;
  CollectiveWatchdog watchdog(0.0, reports.handler());
  const auto finish_at = Clock::now() + std::chrono::milliseconds(200);
  watchdog.watch([&] { return Clock::now() >= finish_at; }, CollectiveName("barrier"), 1);
  ASSERT_TRUE(eventually([&] { return watchdog.watched() == 0; }));
  EXPECT_TRUE(reports.seen().empty());
}

TEST(CollectiveWatchdog, OpsAreWatchedOldestFirstAndTheTimeoutIsTheirs) {
  Reports reports;
  CollectiveWatchdog watchdog(0.0, reports.handler());
  std::atomic<bool> first_done{false};
  watchdog.watch([&] { return first_done.load(); }, CollectiveName("all_reduce", kEight), 1);
  watchdog.set_timeout(0.02);  // the first op keeps its limit (none); the second has 20 ms
  watchdog.watch([] { return false; }, CollectiveName("all_gather", kEight), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The second op is behind the first (one stream): not reported while the first runs.
  EXPECT_TRUE(reports.seen().empty());
  EXPECT_EQ(watchdog.watched(), 2u);
  first_done = true;
  ASSERT_TRUE(eventually([&] { return !reports.seen().empty(); }));
  EXPECT_NE(reports.seen().at(0).find("all_gather of 8 f32 (collective #2"), std::string::npos) << reports.seen().at(0);
}

}  // namespace
}  // namespace farthing::dist

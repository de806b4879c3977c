// save_watchdog.cpp — see save_watchdog.h.
#include "train/loop/save_watchdog.h"

#include <chrono>
#include <utility>

#include "framework/core/error.h"
#include "framework/dist/abort_on_error.h"

namespace farthing {

SaveWatchdog::SaveWatchdog(MpiCommunicator& comm, double timeout_s, int64_t step, std::filesystem::path checkpoint_dir)
    : comm_(comm), timeout_s_(timeout_s), step_(step), checkpoint_dir_(std::move(checkpoint_dir)) {
  if (timeout_s_ > 0.0) thread_ = std::thread([this] { watch(); });
}

SaveWatchdog::~SaveWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SaveWatchdog::watch() {
  std::unique_lock lock(mutex_);
  if (cv_.wait_for(lock, std::chrono::duration<double>(timeout_s_), [this] { return finished_; })) return;
  lock.unlock();
  // The ranks that have not come as far in the save's collectives as this one.
  const std::string absent = comm_.absent_ranks(comm_.collectives_issued());
  abort_job(error_detail::concat("the save of the step-", step_, " checkpoint into ", checkpoint_dir_.string(),
                                 " has not finished after ", timeout_s_, " s (checkpoint.save_timeout_s): ", absent,
                                 "; latest and the earlier checkpoints are untouched, ending the job"));
}

}  // namespace farthing

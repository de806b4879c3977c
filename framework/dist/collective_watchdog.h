// collective_watchdog.h — a thread that watches the collectives no caller waits for on the host
// (NCCL ops ordered on the device by CommHandle::wait_on_device), so that a peer that died or hung
// still ends the job within a bounded time.
//
// A host wait bounds itself (Communicator::set_collective_timeout). An op ordered on the device
// has no host wait: the compute stream waits for it on the GPU, and the next host sync would wait
// forever behind a collective that never finishes. The watchdog polls each such op until it
// finishes; when one fails (its poll throws: NCCL's asynchronous error) or is still running
// `timeout_s` after it was handed over, the watchdog reports the failure — by default through
// abort_job (abort_on_error.h), which prints the one-line error naming the rank and the
// collective and ends every rank, as PyTorch's NCCL watchdog tears the process down.
// NOTE: the bound counts from the handover, and an op handed over waits on the GPU for the
// compute queued before it: the timeout must cover a step's compute as well as the collective
// (distributed.collective_timeout_s is 600 s by default).
// Relies on: communicator.h (the timeout message). Tested by: tests/dist/test_collective_watchdog.cpp.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "framework/dist/communicator.h"

namespace farthing::dist {

class CollectiveWatchdog {
 public:
  // True once the op has finished; throws when it failed. Called on the watchdog's thread.
  using Poll = std::function<bool()>;
  // Told the failure's message (a timeout's, or the poll's error); the default ends the job.
  using OnFailure = std::function<void(const std::string& message)>;

  // timeout_s <= 0: ops are polled for errors with no limit on how long they may run.
  explicit CollectiveWatchdog(double timeout_s, OnFailure on_failure = nullptr, double poll_interval_s = 1e-3);
  ~CollectiveWatchdog();  // stops the thread; ops still watched are dropped unreported
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Applies to ops handed over from now on.
  void set_timeout(double seconds);
  // Watches collective `number` (`what`) from now until `poll` says it finished. After a failure
  // is reported the op is dropped (the default report does not return).
  void watch(Poll poll, const CollectiveName& what, int64_t number);
  // Ops handed over and not yet seen finished (for tests and diagnostics).
  size_t watched() const;

 private:
  struct Watched {
    Poll poll;
    CollectiveName what;
    int64_t number = 0;
    double timeout_s = 0.0;
    double deadline = 0.0;  // steady seconds; meaningful when timeout_s > 0
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Watched> ops_;  // oldest first
  double timeout_s_ = 0.0;
  OnFailure on_failure_;
  double poll_interval_s_ = 1e-3;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace farthing::dist

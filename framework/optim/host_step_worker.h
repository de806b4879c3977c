// host_step_worker.h — one thread that runs an offloaded optimizer's host steps (host_offload.h)
// in the order they are handed over, while the thread that drives the device goes on with the
// next units' backward.
//
// A task touches host memory only (a ring slot, the master and moments in host memory): every
// copy to or from the device stays on the driving thread. That matters on the strict test device,
// whose arena opens to every thread while any backend op runs on one (guarded_arena.h): a task
// reading device memory would go unnoticed there, so none is given any.
// A task that throws stops the work: the tasks after it are dropped, and wait() and submit() on
// the driving thread rethrow its error (its message intact) from then on, so the step fails rather
// than hangs. The destructor lets the tasks handed over finish (or drops them after an error) and
// joins. The thread runs OpenMP regions with the thread count its creator had (omp_get_max_threads
// is per thread), so the CPU kernels' per-thread partial sums are split as the creator's would be.
// Relies on: <thread>, <condition_variable>, OpenMP. Tested by: tests/optim/test_host_step_worker.cpp,
// tests/train/loop/test_offload_timeline.cpp, tests/train/loop/test_train_offload.sh.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace farthing::optim {

class HostStepWorker {
 public:
  using Task = std::function<void()>;
  using Ticket = uint64_t;  // 1, 2, ... in hand-over order

  HostStepWorker();
  ~HostStepWorker();
  HostStepWorker(const HostStepWorker&) = delete;
  HostStepWorker& operator=(const HostStepWorker&) = delete;

  // Queues `task` behind those handed over before it; returns at once. Rethrows an earlier task's error.
  Ticket submit(Task task);
  // Blocks until task `ticket` (and so every one before it) has run. Rethrows a task's error.
  void wait(Ticket ticket);
  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<std::pair<Ticket, Task>> queue_;
  Ticket submitted_ = 0, done_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  int omp_threads_ = 1;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace farthing::optim

// host_step_worker.cpp — see host_step_worker.h.
#include "framework/optim/host_step_worker.h"

#include <omp.h>

#include "framework/core/error.h"

namespace farthing::optim {

HostStepWorker::HostStepWorker() : omp_threads_(omp_get_max_threads()), thread_([this] { run(); }) {}

HostStepWorker::~HostStepWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  thread_.join();
}

HostStepWorker::Ticket HostStepWorker::submit(Task task) {
  std::unique_lock lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  queue_.emplace_back(++submitted_, std::move(task));
  const Ticket ticket = submitted_;
  lock.unlock();
  queued_.notify_one();
  return ticket;
}

void HostStepWorker::wait(Ticket ticket) {
  std::unique_lock lock(mutex_);
  FARTHING_CHECK(ticket <= submitted_, "host step worker: waiting for task ", ticket, " but only ", submitted_,
                 " were handed over");
  finished_.wait(lock, [&] { return done_ >= ticket || error_ != nullptr; });
  if (error_) std::rethrow_exception(error_);
}

void HostStepWorker::run() {
  omp_set_num_threads(omp_threads_);
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every task handed over has run
    auto [ticket, task] = std::move(queue_.front());
    queue_.pop_front();
    if (!error_) {  // after an error the remaining tasks are dropped
      lock.unlock();
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
    }
    done_ = ticket;
    finished_.notify_all();
  }
}

}  // namespace farthing::optim

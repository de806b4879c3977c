// collective_watchdog.cpp — see collective_watchdog.h.
#include "framework/dist/collective_watchdog.h"

#include <chrono>
#include <exception>
#include <utility>

#include "framework/dist/abort_on_error.h"

namespace farthing::dist {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

CollectiveWatchdog::CollectiveWatchdog(double timeout_s, OnFailure on_failure, double poll_interval_s)
    : timeout_s_(timeout_s),
      on_failure_(on_failure ? std::move(on_failure) : OnFailure([](const std::string& message) { abort_job(message); })),
      poll_interval_s_(poll_interval_s),
      thread_([this] { run(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::set_timeout(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_s_ = seconds;
}

void CollectiveWatchdog::watch(Poll poll, const CollectiveName& what, int64_t number) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Watched op{std::move(poll), what, number, timeout_s_, now_seconds() + timeout_s_};
    ops_.push_back(std::move(op));
  }
  wake_.notify_all();
}

size_t CollectiveWatchdog::watched() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_.size();
}

void CollectiveWatchdog::run() {
  const auto interval = std::chrono::duration<double>(poll_interval_s_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !ops_.empty(); });
    if (stopping_) return;
    // NOTE: the oldest op first. A communicator's ops finish in issue order (one stream), so
    // the later ones are behind it; its poll also sees the communicator's asynchronous error.
    // The element stays put while the lock is released (push_back keeps references valid, and
    // only this thread pops).
    Watched& op = ops_.front();
    lock.unlock();
    std::string failure;
    bool finished = false;
    try {
      finished = op.poll();
      if (!finished && op.timeout_s > 0.0 && now_seconds() >= op.deadline) {
        failure = collective_timeout_message(op.what, op.number, op.timeout_s);
      }
    } catch (const std::exception& error) {
      failure = error.what();
    }
    if (!failure.empty()) on_failure_(failure);
    lock.lock();
    if (finished || !failure.empty()) {
      ops_.pop_front();
      continue;
    }
    wake_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

}  // namespace farthing::dist

// test_host_step_worker.cpp — the thread that runs offloaded host steps (framework/optim/host_step_worker.h):
// tasks run on a thread of their own, in hand-over order, while the caller goes on; wait() returns
// once a task has run; a task's error reaches the caller with its message and drops the tasks
// after it; destroying the worker runs what was handed over and joins, error or not.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/optim/host_step_worker.h"

namespace farthing::optim {
namespace {

TEST(HostStepWorker, RunsTasksInHandOverOrderOnItsOwnThread) {
  std::vector<int> order;  // written by the worker only, read after wait()
  std::vector<std::thread::id> threads;
  HostStepWorker worker;
  HostStepWorker::Ticket last = 0;
  for (int i = 0; i < 20; ++i) {
    last = worker.submit([&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  worker.wait(last);
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(order[size_t(i)], i);
    EXPECT_EQ(threads[size_t(i)], worker.thread_id());
    EXPECT_NE(threads[size_t(i)], std::this_thread::get_id()) << "task " << i << " ran on the caller's thread";
  }
}

// The caller is not held while a task runs: the task waits for a signal the caller sends only
// after submit() returned, and wait() then sees it finish.
TEST(HostStepWorker, SubmitReturnsWhileTheTaskRuns) {
  std::promise<void> go;
  std::shared_future<void> released = go.get_future().share();
  std::atomic<bool> ran{false};
  HostStepWorker worker;
  const HostStepWorker::Ticket t = worker.submit([&] {
    released.wait();
    ran = true;
  });
  EXPECT_FALSE(ran.load());
  go.set_value();
  worker.wait(t);
  EXPECT_TRUE(ran.load());
}

// The failing task throws only once the task after it is queued: otherwise that submit() could
// already see the error (as it should) and the test would depend on the thread schedule.
TEST(HostStepWorker, ATaskErrorReachesTheCallerAndDropsTheRest) {
  std::atomic<int> after{0};
  {
    std::promise<void> later_queued;
    std::shared_future<void> released = later_queued.get_future().share();
    HostStepWorker worker;
    worker.wait(worker.submit([] {}));  // before the error: fine
    const HostStepWorker::Ticket failing = worker.submit([released] {
      released.wait();
      FARTHING_FAIL("shard 3's host step ran out of luck");
    });
    const HostStepWorker::Ticket later = worker.submit([&] { ++after; });
    later_queued.set_value();
    try {
      worker.wait(later);
      ADD_FAILURE() << "wait() returned after a task threw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("shard 3's host step ran out of luck"), std::string::npos) << e.what();
    }
    EXPECT_THROW(worker.wait(failing), Error);
    EXPECT_THROW(worker.submit([&] { ++after; }), Error);
  }  // joined: every task handed over has run or been dropped
  EXPECT_EQ(after.load(), 0) << "a task after the failed one ran";
}

TEST(HostStepWorker, DestructionRunsWhatWasHandedOverAndJoins) {
  std::atomic<int> ran{0};
  {
    HostStepWorker worker;
    for (int i = 0; i < 5; ++i) {
      worker.submit([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++ran;
      });
    }
  }
  EXPECT_EQ(ran.load(), 5);
  {  // after an error: no hang, no terminate (the error waits until the task after it is queued)
    std::promise<void> later_queued;
    std::shared_future<void> released = later_queued.get_future().share();
    HostStepWorker worker;
    worker.submit([released] {
      released.wait();
      throw std::runtime_error("boom");
    });
    worker.submit([&] { ++ran; });
    later_queued.set_value();
  }
  EXPECT_EQ(ran.load(), 5);
}

TEST(HostStepWorker, WaitingForATaskNeverHandedOverIsAnError) {
  HostStepWorker worker;
  EXPECT_THROW(worker.wait(1), Error);
}

}  // namespace
}  // namespace farthing::optim

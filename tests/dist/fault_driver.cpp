// fault_driver.cpp — a tiny "tool" for tests/dist/test_fault.sh: every rank runs collectives
// in a loop inside run_main_or_abort(); the rank named by FARTHING_TEST_FAULT_RANK throws a
// farthing::Error at iteration 3 while its peers are already waiting in the next all_reduce.
// The job must end promptly, non-zero, with a message naming the failing rank.
// FARTHING_TEST_FAULT_PENDING=1 also leaves a collective in flight on the failing rank while
// its peers sleep before joining it.
// FARTHING_TEST_FAULT_HANG=1: the named rank does not throw but hangs (sleeps 600 s) before its
// next collective, and every rank bounds its waits at 2 s (set_collective_timeout): the peers'
// waits must end the job, naming the rank that waited and the collective.
// FARTHING_TEST_FAULT_WATCHDOG=1: as the hang mode, but the peers do not wait for the collective
// the hung rank never joins: they hand it to a CollectiveWatchdog (2 s), as a device-ordered NCCL
// op is, and go on "computing" (sleep 600 s). Only the watchdog's default report (abort_job, from
// its own thread) can end the job.
// Relies on: framework/dist (MpiCommunicator, abort_on_error, collective_watchdog).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "framework/dist/abort_on_error.h"
#include "framework/dist/collective_watchdog.h"
#include "framework/dist/mpi_communicator.h"

int main() {
  return farthing::run_main_or_abort([] {
    auto world = farthing::make_world_communicator();
    const char* fault = std::getenv("FARTHING_TEST_FAULT_RANK");
    const int fault_rank = fault != nullptr ? std::atoi(fault) : -1;
    // FARTHING_TEST_FAULT_PENDING=1: the failing rank has a collective in flight that its peers
    // have not reached; its unwinding must not wait for it.
    const bool pending_mode = std::getenv("FARTHING_TEST_FAULT_PENDING") != nullptr;
    const bool hang_mode = std::getenv("FARTHING_TEST_FAULT_HANG") != nullptr;
    const bool watchdog_mode = std::getenv("FARTHING_TEST_FAULT_WATCHDOG") != nullptr;
    if (hang_mode) world->set_collective_timeout(2.0);
    std::optional<farthing::dist::CollectiveWatchdog> watchdog;  // watchdog mode only
    if (watchdog_mode) watchdog.emplace(2.0);
    for (int iteration = 0; iteration < 6; ++iteration) {
      if (watchdog_mode && iteration == 3) {
        if (world->rank() == fault_rank) std::this_thread::sleep_for(std::chrono::seconds(600));  // hung
        static double value = 1.0;
        const farthing::Tensor t(&value, farthing::DType::kF64, {1});
        auto handle = std::make_shared<farthing::CommHandle>(world->all_reduce_async(t, farthing::ReduceOp::kSum));
        watchdog->watch([handle] { return handle->test(); }, farthing::CollectiveName("all_reduce", t),
                        iteration + 1);
        std::this_thread::sleep_for(std::chrono::seconds(600));  // the host goes on; killed by the abort
      }
      if (hang_mode && world->rank() == fault_rank && iteration == 3) {
        std::this_thread::sleep_for(std::chrono::seconds(600));  // hung; killed by a peer's abort
      }
      if (!hang_mode && world->rank() == fault_rank && iteration == 3) {
        farthing::CommHandle pending;
        double token = 1.0;
        if (pending_mode) {  // a collective the peers will not join for a long time
          pending = world->all_reduce_async(farthing::Tensor(&token, farthing::DType::kF64, {1}),
                                            farthing::ReduceOp::kSum);
        }
        FARTHING_FAIL("injected fault (FARTHING_TEST_FAULT_RANK=", fault_rank, ") at iteration ",
                      iteration);
      }
      if (pending_mode && world->rank() != fault_rank && iteration == 3) {
        std::this_thread::sleep_for(std::chrono::seconds(600));  // "computing"; killed by the abort
      }
      double value = world->rank() + iteration;
      world->all_reduce(farthing::Tensor(&value, farthing::DType::kF64, {1}),
                        farthing::ReduceOp::kSum);
    }
    world->barrier();
    if (world->rank() == 0) std::printf("fault_driver: %d ranks finished\n", world->world_size());
    return 0;
  });
}

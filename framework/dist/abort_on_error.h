// abort_on_error.h — how a tool's main() turns an error into a clean, prompt end of the job.
//
// Library code only throws. A tool wraps its body in run_main_or_abort(): an escaping
// exception is printed once, on one line ("farthing: error: ..."; with more than one process
// naming the rank, "farthing: error on rank 1 of 3: ..."; with FARTHING_DEBUG=1 a second line
// gives the source location and failed condition), and then,
// when the job has more than one process, MPI_Abort(MPI_COMM_WORLD, 1) ends every rank, so no
// peer is left waiting in a collective. With one process it returns 1 instead.
// For tools/ (and test drivers) only: this is the one place where the library may end a job
// (abort_job below, for watchdog threads, is the other half of it).
// Relies on: MPI (only when initialised), framework/dist/launcher_env.h.
// Tested by: tests/dist/test_fault.sh (FARTHING_TEST_FAULT_RANK through tests/dist/fault_driver.cpp).
#pragma once

#include <functional>
#include <string>

namespace farthing {

int run_main_or_abort(const std::function<int()>& body);

// For a watchdog thread that finds a collective failed while no caller waits for it on the host
// (collective_watchdog.h): prints the message as run_main_or_abort would and ends the job from
// that thread (MPI_Abort with several processes, else exit status 1, which mpirun and srun
// answer by ending the other ranks). The one other place the library ends a job.
[[noreturn]] void abort_job(const std::string& message);

}  // namespace farthing

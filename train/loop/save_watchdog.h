// save_watchdog.h — a bound on one checkpoint save against a silent node.
//
// A save is collective I/O: parallel HDF5 over MPI-IO calls MPI directly (the collective open,
// every H5Dwrite, the close), outside the communicator's bounded waits
// (distributed.collective_timeout_s). A node that goes silent mid-save (its link cut, its
// process stopped) leaves every other rank blocked in MPI until the transport notices, which
// for TCP can take minutes. So each rank arms a watchdog thread for the save: when the save
// has not finished within checkpoint.save_timeout_s, the thread asks which ranks have not
// arrived (the communicator's roll call, roll_call.h), prints one line naming the save, the step
// and those ranks, and ends the job (abort_job: MPI_Abort). The save has written only its
// temporary file, so `latest` and the previous checkpoints are intact (h5_checkpoint_writer.h).
// A thread and MPI_Abort, not a signal or alarm(): the blocked MPI call cannot be interrupted
// safely, and the thread can still ask the other ranks before the job ends.
// Relies on: framework/dist (MpiCommunicator, abort_on_error).
// Tested by: tests/dist/multihost/test_multihost.sh (fault e: host b's link cut during a save).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

#include "framework/dist/mpi_communicator.h"

namespace farthing {

class SaveWatchdog {
 public:
  // Armed from construction to destruction (the save's scope); timeout_s 0 arms nothing.
  SaveWatchdog(MpiCommunicator& comm, double timeout_s, int64_t step, std::filesystem::path checkpoint_dir);
  ~SaveWatchdog();
  SaveWatchdog(const SaveWatchdog&) = delete;
  SaveWatchdog& operator=(const SaveWatchdog&) = delete;

 private:
  void watch();

  MpiCommunicator& comm_;
  double timeout_s_;
  int64_t step_;
  std::filesystem::path checkpoint_dir_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace farthing

// device_communicator.h — the communicator for the ZeRO collectives on one device's buffers.
//
//   host memory (cpu):                  none needed: the MPI communicator itself;
//   CUDA, each rank on its own GPU:     NcclCommunicator (fixed-order sums, bitwise the MPI
//                                        path), ordered after the backend's stream;
//   otherwise (two ranks sharing a GPU, which NCCL refuses; the strict test device):
//                                        StagedCommunicator, MPI through host staging.
// Every rank makes the same choice (agreed over the host communicator), since a collective
// cannot mix NCCL and MPI.
// Relies on: staged_communicator.h, nccl_communicator.h (CUDA builds), backend/.
// Tested by: tests/train/loop/test_train_strict_device.sh (the staged path at np 2); the NCCL path
// has not run (no GPU yet).
#pragma once

#include <memory>
#include <string>

#include "framework/backend/backend.h"
#include "framework/dist/communicator.h"

namespace farthing::dist {

struct DeviceCommunicator {
  std::unique_ptr<Communicator> comm;  // null on the host: use the host communicator
  std::string kind;                    // "mpi", "nccl" or "mpi (staged through the host)"
};

// Collective over host: every rank calls it with its own backend.
DeviceCommunicator make_device_communicator(Communicator& host, Backend& backend);

}  // namespace farthing::dist

// launcher_env.h — what the launcher (Open MPI's mpirun, Slurm's srun, MPICH/Hydra) tells a
// process about its place in the job, read from the environment before MPI is initialised.
//
// MPI itself is the authority once running (MpiCommunicator's topology comes from
// MPI_Comm_split_type); this is for decisions taken earlier, such as which GPU a rank should
// select before creating its NCCL communicator, and for cross-checking. Fields the launcher
// does not provide stay empty.
// Relies on: nothing but the environment.
// Tested by: tests/dist/test_collectives.cpp (fake environments, and agreement with MPI under
// mpirun).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace farthing {

struct LauncherEnv {
  std::string launcher;  // "openmpi", "slurm", "pmi" or "" (none: a single process)
  std::optional<int> rank, world_size, local_rank, local_size, node_count;
};

// getenv_fn defaults to std::getenv; tests pass a fake.
LauncherEnv read_launcher_env(
    const std::function<const char*(const char*)>& getenv_fn = {});

}  // namespace farthing

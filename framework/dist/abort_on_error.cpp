// abort_on_error.cpp — see abort_on_error.h.
#include "framework/dist/abort_on_error.h"

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

#include "framework/dist/launcher_env.h"

namespace farthing {

namespace {

struct Place {
  int rank = 0;
  int world_size = 1;
  bool mpi_running = false;
};

Place where_am_i() {
  Place place;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    place.mpi_running = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &place.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &place.world_size);
    return place;
  }
  const LauncherEnv env = read_launcher_env();
  place.rank = env.rank.value_or(0);
  place.world_size = env.world_size.value_or(1);
  return place;
}

int report_and_abort(const std::string& message) {
  const Place place = where_am_i();
  // One fprintf per message, so lines from different ranks do not interleave mid-line.
  std::fprintf(stderr, "farthing: error on rank %d of %d: %s\n", place.rank, place.world_size,
               message.c_str());
  std::fflush(stderr);
  if (place.world_size > 1 && place.mpi_running) MPI_Abort(MPI_COMM_WORLD, 1);
  // Without MPI running, a non-zero exit makes mpirun/srun end the other ranks.
  return 1;
}

}  // namespace

int run_main_or_abort(const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    return report_and_abort(error.what());
  } catch (...) {
    return report_and_abort("unknown exception (not derived from std::exception)");
  }
}

}  // namespace farthing

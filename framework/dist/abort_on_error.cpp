// abort_on_error.cpp — see abort_on_error.h.
#include "framework/dist/abort_on_error.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "framework/core/error.h"
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

// FARTHING_DEBUG=1 (tools set it for --verbose): also print where the error was raised.
bool debug_requested() {
  const char* value = std::getenv("FARTHING_DEBUG");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

int report_and_abort(const std::string& message, const std::string& location = "") {
  const Place place = where_am_i();
  // One line for the user; the rank only where there is more than one; the source location
  // only when asked. One fprintf per message, so ranks' lines do not interleave mid-line.
  const std::string rank = place.world_size > 1 ? " on rank " + std::to_string(place.rank) + " of " +
                                                      std::to_string(place.world_size)
                                                : "";
  const std::string where = debug_requested() && !location.empty() ? "\n  " + location : "";
  std::fprintf(stderr, "farthing: error%s: %s%s\n", rank.c_str(), message.c_str(), where.c_str());
  std::fflush(stderr);
  if (place.world_size > 1 && place.mpi_running) MPI_Abort(MPI_COMM_WORLD, 1);
  // Without MPI running, a non-zero exit makes mpirun/srun end the other ranks.
  return 1;
}

}  // namespace

void abort_job(const std::string& message) {
  report_and_abort(message);
  // NOTE: _Exit, not exit: other threads are running (the caller is a watchdog), so no static
  // destructors may run under them.
  std::_Exit(1);
}

int run_main_or_abort(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& error) {
    return report_and_abort(error.what(), error.location());
  } catch (const std::exception& error) {
    return report_and_abort(error.what());
  } catch (...) {
    return report_and_abort("unknown exception (not derived from std::exception)");
  }
}

}  // namespace farthing

// launcher_env.cpp — see launcher_env.h.
#include "framework/dist/launcher_env.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace farthing {

namespace {

std::optional<int> parse_int(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  int value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

LauncherEnv read_launcher_env(const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* name) -> const char* {
    return getenv_fn ? getenv_fn(name) : std::getenv(name);
  };
  auto num = [&](const char* name) { return parse_int(get(name)); };
  LauncherEnv env;
  if (get("OMPI_COMM_WORLD_SIZE") != nullptr) {
    env.launcher = "openmpi";
    env.rank = num("OMPI_COMM_WORLD_RANK");
    env.world_size = num("OMPI_COMM_WORLD_SIZE");
    env.local_rank = num("OMPI_COMM_WORLD_LOCAL_RANK");
    env.local_size = num("OMPI_COMM_WORLD_LOCAL_SIZE");
    env.node_count = num("OMPI_MCA_orte_num_nodes");
  } else if (get("SLURM_PROCID") != nullptr && get("SLURM_NTASKS") != nullptr) {
    env.launcher = "slurm";
    env.rank = num("SLURM_PROCID");
    env.world_size = num("SLURM_NTASKS");
    env.local_rank = num("SLURM_LOCALID");
    // SLURM_NTASKS_PER_NODE is a plain number only when every node runs the same count.
    env.local_size = num("SLURM_NTASKS_PER_NODE");
    env.node_count = num("SLURM_NNODES");
    if (!env.node_count) env.node_count = num("SLURM_JOB_NUM_NODES");
  } else if (get("PMI_SIZE") != nullptr) {
    env.launcher = "pmi";
    env.rank = num("PMI_RANK");
    env.world_size = num("PMI_SIZE");
    env.local_rank = num("MPI_LOCALRANKID");
    env.local_size = num("MPI_LOCALNRANKS");
  }
  return env;
}

}  // namespace farthing

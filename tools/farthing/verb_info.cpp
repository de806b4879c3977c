// verb_info.cpp — `farthing info`: what this binary was built with and which devices it sees.
#include <omp.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "framework/backend/backend.h"
#include "tools/farthing/verbs.h"

namespace {

int run_info() {
  std::printf("farthing %s\n", "0.1.0");
#if defined(FARTHING_WITH_CUDA)
  std::printf("cuda backend: built; devices visible: %s\n", farthing::cuda_available() ? "yes" : "no");
#else
  std::printf("cuda backend: not built\n");
#endif
  std::printf("openmp threads: %d\n", omp_get_max_threads());
  return 0;
}

VerbRun define_info(CLI::App&) { return run_info; }

const VerbRegistration kInfo{"info", "what this binary was built with and which devices it sees", define_info};

}  // namespace

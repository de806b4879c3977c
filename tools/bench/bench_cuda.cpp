// bench_cuda.cpp — see bench_cuda.h.
#include "tools/bench/bench_cuda.h"
#include "train/plan/time_best.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "framework/backend/backend.h"

#if FARTHING_WITH_CUDA
#include <cuda_runtime_api.h>

#include "framework/backend/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#endif

namespace farthing::bench {

bool cuda_bench_unavailable(const char* suite) {
#if FARTHING_WITH_CUDA
  if (cuda_device_count() > 0) return false;
  int driver = 0;
  const cudaError_t status = cudaDriverGetVersion(&driver);
  const std::string why = status != cudaSuccess || driver == 0
                              ? "no NVIDIA driver"
                              : "the driver sees no GPU (CUDA_VISIBLE_DEVICES, or none installed)";
  std::printf("farthing bench %s --device cuda: no CUDA device (%s); skipped\n", suite, why.c_str());
#else
  std::printf("farthing bench %s --device cuda: no CUDA device (this farthing was built without CUDA); "
              "skipped\n", suite);
#endif
  return true;
}

std::string cuda_device_summary() {
#if FARTHING_WITH_CUDA
  cudaDeviceProp prop{};
  FARTHING_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  FARTHING_CUDA_CHECK(cudaDriverGetVersion(&driver));
  FARTHING_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  char text[512];
  std::snprintf(text, sizeof text, "%s, %d SMs, %.1f GiB, sm_%d%d; driver %d.%d, runtime %d.%d", prop.name,
                prop.multiProcessorCount, double(prop.totalGlobalMem) / double(1ull << 30), prop.major, prop.minor,
                driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  return text;
#else
  return "no CUDA";
#endif
}

double cuda_time_best(const std::function<void()>& queue, double min_seconds) {
#if FARTHING_WITH_CUDA
  return train::time_best(queue, [] { FARTHING_CUDA_CHECK(cudaDeviceSynchronize()); }, min_seconds);
#else
  static_cast<void>(queue);
  static_cast<void>(min_seconds);
  return 0.0;
#endif
}

}  // namespace farthing::bench

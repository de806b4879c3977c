// bench_cuda.h — what the `--device cuda` suites share: the skip when there is no GPU, a
// description of the device for the report, and device timing.
//
// Device work is timed by time_best.h's loop around a device synchronisation. Plain C++: no
// CUDA type appears here (the suites that need the runtime include it themselves, under
// FARTHING_WITH_CUDA).
// Relies on: framework/backend (cuda_device_count), the CUDA runtime in CUDA builds.
// Tested by: running the suites; without a GPU they print "no CUDA device" and exit 77
// (tools/gpu/check.sh's dry run, tests/gpu).
#pragma once

#include <functional>
#include <string>

namespace farthing::bench {

// The exit code of a suite that cannot run on this machine: ctest's and check.sh's "skipped".
inline constexpr int kBenchSkipped = 77;

// When no CUDA device can run the suite (no CUDA build, no driver, no GPU): prints
// "farthing bench SUITE --device cuda: no CUDA device (why); skipped" and returns true.
bool cuda_bench_unavailable(const char* suite);

// "NVIDIA H200, 132 SMs, 139.8 GiB, sm_90; driver 13.0, runtime 13.0" for device 0.
std::string cuda_device_summary();

// Best seconds per call of `queue` (which queues device work and need not wait): time_best.h's
// loop, each batch followed by cudaDeviceSynchronize (the suites' raw kernels run on any stream).
double cuda_time_best(const std::function<void()>& queue, double min_seconds);

}  // namespace farthing::bench

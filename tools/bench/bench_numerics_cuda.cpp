// bench_numerics_cuda.cpp — `farthing bench numerics --device cuda`: every cast, stochastic-
// rounding cast and 8-bit block quantize/dequantize of the CUDA backend on device buffers far
// beyond the L2 cache, next to a device-to-device copy of the same bytes in the same run.
//
// GB/s counts bytes read + written once each (a copy of N bytes moves 2N). Each row's batches
// alternate with copy batches and each keeps its best, as on the CPU, so the ratio per row is
// fair even if the clocks move during the run. Everything goes through the Backend interface,
// the path the trainer takes. Exits 77 ("skipped") without a CUDA device.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_cuda.h"
#include "tools/bench/numerics_kernels.h"

namespace farthing::bench {

namespace {

struct Row {
  std::string kernel;
  double bytes_per_elem;
  double seconds;
  double gbps;
  double copy_gbps;
};

}  // namespace

int run_numerics_bench_cuda(const BenchOptions& options) {
  if (cuda_bench_unavailable("numerics")) return kBenchSkipped;
  const int64_t n = options.elements > 0 ? options.elements : int64_t(256) << 20;  // 1 GiB of f32
  const Device device = Device::cuda(0);
  Backend& gpu = backend_for(device);
  Buffer src_buf(device, size_t(n) * 4, MemoryCategory::kOther);
  Buffer out_buf(device, size_t(n) * 4, MemoryCategory::kOther);
  Buffer narrow_buf(device, size_t(n) * 2, MemoryCategory::kOther);
  const int64_t blocks = (n + 255) / 256;
  Buffer absmax_buf(device, size_t(blocks) * 4, MemoryCategory::kOther);
  {
    // Values spread like optimizer moments (as the CPU suite): many magnitudes, both signs.
    const int64_t chunk = std::min<int64_t>(n, int64_t(16) << 20);
    std::vector<float> host(size_t(chunk), 0.0f);
    for (int64_t begin = 0; begin < n; begin += chunk) {
      const int64_t count = std::min(chunk, n - begin);
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < count; ++j) host[size_t(j)] = moment_like_value(begin + j);
      const Tensor host_view(host.data(), DType::kF32, Shape{count}, Device::cpu());
      const Tensor dst(static_cast<float*>(src_buf.data()) + begin, DType::kF32, Shape{count}, device);
      gpu.copy(dst, host_view);
    }
  }
  const Tensor f32 = src_buf.view(DType::kF32, Shape{n});
  const Tensor f32_out = out_buf.view(DType::kF32, Shape{n});
  const Tensor absmax = absmax_buf.view(DType::kF32, Shape{blocks});

  double best_copy_overall = 1e30;
  std::vector<Row> rows;
  auto measure = [&](const std::string& name, double bytes_per_elem, const std::function<void()>& fn) {
    double best_kernel = 1e30, best_copy = 1e30;
    for (int round = 0; round < 3; ++round) {
      best_kernel = std::min(best_kernel, cuda_time_best(fn, options.min_seconds / 3));
      best_copy = std::min(best_copy, cuda_time_best([&] { gpu.copy(f32_out, f32); }, options.min_seconds / 3));
    }
    best_copy_overall = std::min(best_copy_overall, best_copy);
    rows.push_back({name, bytes_per_elem, best_kernel, bytes_per_elem * double(n) / best_kernel / 1e9,
                    8.0 * double(n) / best_copy / 1e9});
  };

  measure_cast_rows(gpu, f32, f32_out, narrow_buf.data(), n, measure);
  measure_quant_rows(gpu, f32, f32_out, narrow_buf.view(DType::kU8, Shape{n}), absmax, measure);
  gpu.synchronize();

  const double copy_gbps = 8.0 * double(n) / best_copy_overall / 1e9;
  const std::string summary = cuda_device_summary();
  if (options.json) {
    std::printf("{\"suite\": \"numerics\", \"device\": \"cuda:0\", \"gpu\": \"%s\", \"elements\": %lld, "
                "\"copy_gbps\": %.3f, \"kernels\": [", summary.c_str(), (long long)n, copy_gbps);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"kernel\": \"%s\", \"bytes_per_elem\": %.4f, \"seconds\": %.6f, \"gbps\": %.3f, "
                  "\"copy_gbps\": %.3f, \"ratio_to_copy\": %.3f}", i ? ", " : "", r.kernel.c_str(),
                  r.bytes_per_elem, r.seconds, r.gbps, r.copy_gbps, r.gbps / r.copy_gbps);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("farthing bench numerics — cuda:0 (%s), %lld elements (%.0f MiB of f32)\n", summary.c_str(),
              (long long)n, double(n) * 4 / (1 << 20));
  std::printf("copy ceiling: device-to-device copy, best %.1f GB/s (bytes read + written); each row's ratio\n"
              "uses the copy measured alternately with that row's kernel\n\n", copy_gbps);
  std::printf("%-26s %10s %10s %10s %12s %10s\n", "kernel", "bytes/elem", "ms", "GB/s", "copy GB/s", "x copy");
  for (const Row& r : rows) {
    std::printf("%-26s %10.3f %10.3f %10.1f %12.1f %10.2f\n", r.kernel.c_str(), r.bytes_per_elem, r.seconds * 1e3,
                r.gbps, r.copy_gbps, r.gbps / r.copy_gbps);
  }
  return 0;
}

}  // namespace farthing::bench

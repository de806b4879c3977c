// bench_numerics.cpp — `farthing bench numerics`: throughput of every cast, stochastic-rounding
// cast and 8-bit block quantize/dequantize on buffers far beyond the caches, next to memcpy of
// the same bytes measured in the same run.
//
// GB/s counts bytes read + written once each (a memcpy of N bytes moves 2N). The ceiling is
// the better of std::memcpy and an OpenMP-parallel memcpy, so the ratio is against the best
// copy this machine does with the same threads. Each kernel's repetitions alternate with
// memcpy repetitions and each row keeps the best of both, so a machine whose load changes
// during the run still gives a fair ratio per row.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "kernels/cpu/random_bits_cpu.h"
#include "tools/bench/bench.h"
#include "tools/bench/numerics_kernels.h"

namespace farthing::bench {

namespace {

namespace nm = farthing::numerics;


void parallel_fill(void* data, size_t bytes, unsigned char value) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(bytes); i += 4096) {
    std::memset(static_cast<char*>(data) + i, value, std::min<size_t>(4096, bytes - size_t(i)));
  }
}

struct Row {
  std::string kernel;
  double bytes_per_elem;
  double seconds;
  double gbps;
  double memcpy_gbps;
};

}  // namespace

int run_numerics_bench(const BenchOptions& options) {
  if (options.device == "cuda") return run_numerics_bench_cuda(options);
  const int64_t n = options.elements > 0 ? options.elements : int64_t(64) << 20;  // 256 MiB of f32
  Backend& cpu = backend_for(Device::cpu());
  Buffer src_buf(Device::cpu(), size_t(n) * 4, MemoryCategory::kOther);
  Buffer out_buf(Device::cpu(), size_t(n) * 4, MemoryCategory::kOther);
  Buffer narrow_buf(Device::cpu(), size_t(n) * 2, MemoryCategory::kOther);
  const int64_t blocks = (n + 255) / 256;
  Buffer absmax_buf(Device::cpu(), size_t(blocks) * 4, MemoryCategory::kOther);
  parallel_fill(out_buf.data(), out_buf.bytes(), 0);
  parallel_fill(narrow_buf.data(), narrow_buf.bytes(), 0);
  parallel_fill(absmax_buf.data(), absmax_buf.bytes(), 0);
  {
    float* x = static_cast<float*>(src_buf.data());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) x[i] = moment_like_value(i);
  }
  const Tensor f32 = src_buf.view(DType::kF32, Shape{n});
  const Tensor f32_out = out_buf.view(DType::kF32, Shape{n});
  const Tensor absmax = absmax_buf.view(DType::kF32, Shape{blocks});

  const size_t copy_bytes = size_t(n) * 4;
  double overall_memcpy_seconds = 1e30;
  std::vector<Row> rows;
  auto measure = [&](const std::string& name, double bytes_per_elem, const std::function<void()>& fn) {
    fn();  // warm up
    double best_kernel = 1e30, best_copy = 1e30, total = 0.0;
    for (int rep = 0; total < 2 * options.min_seconds || rep < 3; ++rep) {
      for (int which = 0; which < 3; ++which) {
        const auto t0 = std::chrono::steady_clock::now();
        if (which == 0) fn();
        else if (which == 1) std::memcpy(out_buf.data(), src_buf.data(), copy_bytes);
        else parallel_memcpy(out_buf.data(), src_buf.data(), copy_bytes);
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        (which == 0 ? best_kernel : best_copy) = std::min(which == 0 ? best_kernel : best_copy, sec);
        total += sec;
      }
    }
    overall_memcpy_seconds = std::min(overall_memcpy_seconds, best_copy);
    const double gbps = bytes_per_elem * double(n) / best_kernel / 1e9;
    rows.push_back({name, bytes_per_elem, best_kernel, gbps, 2.0 * double(copy_bytes) / best_copy / 1e9});
  };

  measure_cast_rows(cpu, f32, f32_out, narrow_buf.data(), n, measure);
  // What bounds the stochastic-rounding casts: the random bits alone (Philox4x32-10, one call
  // per four elements, the same routine the casts use), written as 4 bytes per element.
  {
    auto* words = static_cast<uint32_t*>(out_buf.data());
    const nm::RandomKey key{1234, 1, nm::RandomPurpose::kWeightCast};
    measure("philox bits only (4 B out)", 4, [&] {
      const int64_t runs = (n + kernels::kRandomBitsChunk - 1) / kernels::kRandomBitsChunk;
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < runs; ++r) {
        const int64_t begin = r * kernels::kRandomBitsChunk;
        const int count = int(std::min<int64_t>(kernels::kRandomBitsChunk, n - begin));
        kernels::fill_random_bits_cpu(key, uint64_t(begin), count, words + begin);
      }
    });
  }
  measure_quant_rows(cpu, f32, f32_out, narrow_buf.view(DType::kU8, Shape{n}), absmax, measure);

  const double memcpy_gbps = 2.0 * double(copy_bytes) / overall_memcpy_seconds / 1e9;
  if (options.json) {
    std::printf("{\"suite\": \"numerics\", \"device\": \"cpu\", \"threads\": %d, \"elements\": %lld, "
                "\"memcpy_gbps\": %.3f, \"kernels\": [", omp_get_max_threads(), (long long)n, memcpy_gbps);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"kernel\": \"%s\", \"bytes_per_elem\": %.4f, \"seconds\": %.6f, \"gbps\": %.3f, "
                  "\"memcpy_gbps\": %.3f, \"ratio_to_memcpy\": %.3f}", i ? ", " : "", r.kernel.c_str(),
                  r.bytes_per_elem, r.seconds, r.gbps, r.memcpy_gbps, r.gbps / r.memcpy_gbps);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("farthing bench numerics — cpu, %d threads, %lld elements (%.0f MiB of f32)\n",
              omp_get_max_threads(), (long long)n, double(n) * 4 / (1 << 20));
  std::printf("memcpy ceiling: best %.2f GB/s (bytes read + written); each row's ratio uses the memcpy\n"
              "measured alternately with that row's kernel\n\n", memcpy_gbps);
  std::printf("%-26s %10s %10s %10s %12s %10s\n", "kernel", "bytes/elem", "ms", "GB/s", "memcpy GB/s", "x memcpy");
  for (const Row& r : rows) {
    std::printf("%-26s %10.3f %10.2f %10.2f %12.2f %10.2f\n", r.kernel.c_str(), r.bytes_per_elem, r.seconds * 1e3,
                r.gbps, r.memcpy_gbps, r.gbps / r.memcpy_gbps);
  }
  return 0;
}

}  // namespace farthing::bench

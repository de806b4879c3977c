// bench_gemm.cpp — `farthing bench gemm --device cuda`: cuBLASLt BF16 GEMM (fp32 accumulate)
// at the shapes of one training step of a preset's transformer and at 8192³, in TFLOP/s. It
// is the ceiling every later GPU number (a layer, a step) is a fraction of.
//
// Shapes are forward Linear layers, C (tokens, out) = X (tokens, in) · Wᵀ, with tokens = seq ×
// batch (defaults 2048 × 4, preset llama3.2-1b; --preset --seq --batch change them). Every
// shape's output is checked at 64 sampled entries against a double-precision dot product of the
// same bf16 inputs on the host (tolerance: bf16 output rounding plus fp32 accumulation), so a
// fast wrong GEMM fails (exit 1) instead of reporting a number. Exits 77 ("skipped") without a
// CUDA device; there is no CPU form of this suite (the CPU's is the train suite's ceiling).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "models/common/presets.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_cuda.h"

#if FARTHING_WITH_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_cublaslt.h"
#include "kernels/numerics/bf16.h"
#endif

namespace farthing::bench {

#if FARTHING_WITH_CUDA

namespace {

namespace nm = farthing::numerics;

struct Shape3 {
  std::string name;
  int64_t m, n, k;
};

struct Row {
  Shape3 shape;
  double seconds;
  double max_error_ratio;  // worst |c - ref| / tolerance over the samples (<= 1 passes)
};

// bf16 values in [-1, 1) from a hash of (seed, i): exact in bf16, so the host reference sees the
// very inputs the GPU multiplies.
std::vector<uint16_t> random_bf16(size_t count, uint64_t seed) {
  std::vector<uint16_t> out(count);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(count); ++i) {
    uint64_t h = (uint64_t(i) + seed * 0x632BE59BD9B4E019ull) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    const float x = float(int64_t(h >> 40) - (int64_t(1) << 23)) / float(1 << 23);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    out[size_t(i)] = uint16_t(bits >> 16);
  }
  return out;
}

void* upload(const std::vector<uint16_t>& host) {
  void* p = nullptr;
  FARTHING_CUDA_CHECK(cudaMalloc(&p, host.size() * 2));
  FARTHING_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  return p;
}

Row run_shape(const Shape3& s, double min_seconds) {
  const std::vector<uint16_t> a = random_bf16(size_t(s.m * s.k), 1), b = random_bf16(size_t(s.n * s.k), 2);
  void* da = upload(a);
  void* db = upload(b);
  void* dc = nullptr;
  FARTHING_CUDA_CHECK(cudaMalloc(&dc, size_t(s.m * s.n) * 2));
  Row row{s, 0.0, 0.0};
  try {
    kernels::GemmBf16Lt gemm(s.m, s.n, s.k, nullptr);
    row.seconds = cuda_time_best([&] { gemm.run(da, db, dc); }, min_seconds);
    FARTHING_CUDA_CHECK(cudaDeviceSynchronize());
    for (int sample = 0; sample < 64; ++sample) {
      const uint64_t h = (uint64_t(sample) + 1) * 0x9E3779B97F4A7C15ull;
      const int64_t i = int64_t(h % uint64_t(s.m)), j = int64_t((h >> 32) % uint64_t(s.n));
      double ref = 0.0, magnitude = 0.0;
      for (int64_t t = 0; t < s.k; ++t) {
        const double p = double(nm::bf16_to_f32(a[size_t(i * s.k + t)])) * double(nm::bf16_to_f32(b[size_t(j * s.k + t)]));
        ref += p;
        magnitude += std::fabs(p);
      }
      uint16_t c = 0;
      FARTHING_CUDA_CHECK(cudaMemcpy(&c, static_cast<uint16_t*>(dc) + i * s.n + j, 2, cudaMemcpyDeviceToHost));
      // NOTE: bf16 output rounding (2^-8 relative) plus fp32 accumulation in any order
      // (k * 2^-24 of the sum of magnitudes), with a factor 2 of slack.
      const double tolerance = 2.0 * (std::fabs(ref) * 0x1p-8 + double(s.k) * 0x1p-24 * magnitude) + 1e-30;
      row.max_error_ratio = std::max(row.max_error_ratio, std::fabs(double(nm::bf16_to_f32(c)) - ref) / tolerance);
    }
  } catch (...) {
    cudaFree(da), cudaFree(db), cudaFree(dc);
    throw;
  }
  cudaFree(da), cudaFree(db), cudaFree(dc);
  return row;
}

}  // namespace

int run_gemm_bench(const BenchOptions& options) {
  if (options.device != "cuda") {
    std::fprintf(stderr, "farthing bench gemm: runs on a GPU only; use --device cuda\n");
    return 2;
  }
  if (cuda_bench_unavailable("gemm")) return kBenchSkipped;
  const std::string preset = options.preset.empty() ? "llama3.2-1b" : options.preset;
  const models::ModelConfig config = models::preset_config(preset);
  const int64_t seq = options.seq > 0 ? options.seq : 2048, batch = options.batch > 0 ? options.batch : 4;
  const int64_t tokens = seq * batch;
  const std::vector<Shape3> shapes = {
      {"qkv projection", tokens, config.qkv_dim(), config.dim},
      {"attention output", tokens, config.dim, config.dim},
      {"mlp up (one of gate/up)", tokens, config.hidden_dim, config.dim},
      {"mlp down", tokens, config.dim, config.hidden_dim},
      {"lm head", tokens, config.vocab_size, config.dim},
      {"square 8192^3", 8192, 8192, 8192},
  };
  FARTHING_CUDA_CHECK(cudaSetDevice(0));
  std::vector<Row> rows;
  for (const Shape3& s : shapes) rows.push_back(run_shape(s, options.min_seconds));
  bool all_correct = true;
  for (const Row& r : rows) all_correct = all_correct && r.max_error_ratio <= 1.0;
  const std::string summary = cuda_device_summary();
  const size_t lt = kernels::GemmBf16Lt::library_version();

  if (options.json) {
    std::printf("{\"suite\": \"gemm\", \"device\": \"cuda:0\", \"gpu\": \"%s\", \"cublaslt\": %zu, \"preset\": \"%s\", "
                "\"tokens\": %lld, \"rows\": [", summary.c_str(), lt, preset.c_str(), (long long)tokens);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"shape\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"seconds\": %.6g, \"tflops\": %.2f, "
                  "\"max_error_ratio\": %.3f}", i ? ", " : "", r.shape.name.c_str(), (long long)r.shape.m,
                  (long long)r.shape.n, (long long)r.shape.k, r.seconds,
                  2.0 * double(r.shape.m) * double(r.shape.n) * double(r.shape.k) / r.seconds / 1e12, r.max_error_ratio);
    }
    std::printf("], \"correct\": %s}\n", all_correct ? "true" : "false");
  } else {
    std::printf("farthing bench gemm — cuda:0 (%s), cuBLASLt %zu, bf16 in/out, fp32 accumulate\n", summary.c_str(), lt);
    std::printf("shapes of %s at %lld tokens (seq %lld x batch %lld): C (m, n) = A (m, k) . B (n, k)^T\n\n",
                preset.c_str(), (long long)tokens, (long long)seq, (long long)batch);
    std::printf("%-26s %7s %7s %7s %10s %9s %12s\n", "shape", "m", "n", "k", "ms", "TFLOP/s", "err/tol");
    for (const Row& r : rows) {
      std::printf("%-26s %7lld %7lld %7lld %10.3f %9.1f %12.3f%s\n", r.shape.name.c_str(), (long long)r.shape.m,
                  (long long)r.shape.n, (long long)r.shape.k, r.seconds * 1e3,
                  2.0 * double(r.shape.m) * double(r.shape.n) * double(r.shape.k) / r.seconds / 1e12,
                  r.max_error_ratio, r.max_error_ratio <= 1.0 ? "" : "  WRONG");
    }
  }
  if (!all_correct) {
    std::fprintf(stderr, "farthing bench gemm: a GEMM result is outside its tolerance (rows marked WRONG)\n");
    return 1;
  }
  return 0;
}

#else

int run_gemm_bench(const BenchOptions& options) {
  if (options.device != "cuda") {
    std::fprintf(stderr, "farthing bench gemm: runs on a GPU only; use --device cuda\n");
    return 2;
  }
  cuda_bench_unavailable("gemm");
  return kBenchSkipped;
}

#endif

}  // namespace farthing::bench

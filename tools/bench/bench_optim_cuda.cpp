// bench_optim_cuda.cpp — `farthing bench optim --device cuda`: the fused CUDA AdamW step
// (kernels/cuda/optim_cuda.h) per state/master/rounding configuration on 1B parameters, in GB/s
// and as a ratio to a device-to-device copy measured in the same run.
//
// GB/s counts the bytes each step reads and writes once each, as the CPU suite does (gradient
// bf16, master read + write, moments read + write, bf16 weight read + write). Each step waits
// for its diagnostics (adamw_step_cuda returns them to the host), as the trainer's does, so the
// time includes that small synchronisation. Every timed call is a real next step (the step
// counter advances), from zero moments and a bf16 weight. Exits 77 ("skipped") without a GPU.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/bench/bench.h"
#include "tools/bench/bench_cuda.h"

#if FARTHING_WITH_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cpu/block_quant_cpu.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/optim_cuda.h"
#include "kernels/numerics/adamw_update.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/dynamic_map.h"
#endif

namespace farthing::bench {

#if FARTHING_WITH_CUDA

namespace {

namespace kn = farthing::kernels;
namespace nm = farthing::numerics;

// Device memory for the length of one configuration.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) FARTHING_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) static_cast<void>(cudaFree(ptr_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// dst[i] = value_of(i) for i < n, built on the host in chunks and uploaded.
template <class T, class F>
void fill_device(T* dst, int64_t n, F value_of) {
  const int64_t chunk = std::min<int64_t>(n, int64_t(32) << 20);
  std::vector<T> host(size_t(std::max<int64_t>(chunk, 1)));
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t count = std::min(chunk, n - begin);
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < count; ++j) host[size_t(j)] = value_of(begin + j);
    FARTHING_CUDA_CHECK(cudaMemcpy(dst + begin, host.data(), size_t(count) * sizeof(T), cudaMemcpyHostToDevice));
  }
}

uint16_t bench_grad_bf16(int64_t i) {
  const uint64_t h = uint64_t(i) * 0x9E3779B97F4A7C15ull;
  const float x = (float((h >> 40) & 0xFFFF) / 32768.0f - 1.0f) * 1e-3f;  // as the CPU suite
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return uint16_t(bits >> 16);
}

uint16_t bench_weight_bf16(int64_t i) { return uint16_t(0x3C00u + (uint32_t(i) & 0x3FFu)); }  // ~0.008..0.016

struct Config {
  const char* name;
  kn::MomentFormat moments;
  kn::MasterMode master;
  kn::WeightRounding rounding;
};

double moment_bytes(kn::MomentFormat f) {  // m and v together, one way
  return f == kn::MomentFormat::kF32    ? 8.0
         : f == kn::MomentFormat::kBf16 ? 4.0
         : f == kn::MomentFormat::kBlock8 ? 2.0 + 8.0 / 256.0
                                          : 1.0 + 8.0 / 128.0;
}

double bytes_moved_per_param(const Config& c) {
  const double master = c.master == kn::MasterMode::kF32 ? 8.0 : c.master == kn::MasterMode::kRemainder16 ? 4.0 : 0.0;
  return 2.0 /* grad */ + master + 2.0 * moment_bytes(c.moments) + 4.0 /* weight read + write */;
}

size_t moment_value_bytes(kn::MomentFormat f, size_t n) {
  return f == kn::MomentFormat::kF32 ? 4 * n : f == kn::MomentFormat::kBf16 ? 2 * n
                                       : f == kn::MomentFormat::kBlock8    ? n
                                                                            : (n + 1) / 2;
}

size_t moment_absmax_count(kn::MomentFormat f, size_t n) {
  return f == kn::MomentFormat::kBlock8 ? (n + 255) / 256 : f == kn::MomentFormat::kBlock4 ? (n + 127) / 128 : 0;
}

struct Row {
  std::string name;
  double bytes_per_param;
  double seconds;
};

}  // namespace

int run_optim_bench_cuda(const BenchOptions& options) {
  if (cuda_bench_unavailable("optim")) return kBenchSkipped;
  const int64_t n = options.elements > 0 ? options.elements : int64_t(1000) * 1000 * 1000;
  const size_t un = size_t(n);
  const Config configs[] = {
      {"fp32 state, fp32 master, RN", kn::MomentFormat::kF32, kn::MasterMode::kF32, kn::WeightRounding::kNearest},
      {"bf16 state, fp32 master, RN", kn::MomentFormat::kBf16, kn::MasterMode::kF32, kn::WeightRounding::kNearest},
      {"8-bit state, fp32 master, RN", kn::MomentFormat::kBlock8, kn::MasterMode::kF32, kn::WeightRounding::kNearest},
      {"8-bit state, fp32 master, SR", kn::MomentFormat::kBlock8, kn::MasterMode::kF32, kn::WeightRounding::kStochastic},
      {"8-bit state, remainder16, RN", kn::MomentFormat::kBlock8, kn::MasterMode::kRemainder16,
       kn::WeightRounding::kNearest},
      {"8-bit state, no master, SR", kn::MomentFormat::kBlock8, kn::MasterMode::kNone, kn::WeightRounding::kStochastic},
      {"4-bit state, no master, SR", kn::MomentFormat::kBlock4, kn::MasterMode::kNone, kn::WeightRounding::kStochastic},
  };
  FARTHING_CUDA_CHECK(cudaSetDevice(0));
  DeviceBuffer grads(2 * un), weights(2 * un);
  fill_device(grads.as<uint16_t>(), n, bench_grad_bf16);

  // The maps, as the parity test uploads them.
  const kn::QuantMapCpu signed_map = kn::make_quant_map_cpu(nm::MapSign::kSigned);
  const kn::QuantMapCpu unsigned_map = kn::make_quant_map_cpu(nm::MapSign::kUnsigned);
  const nm::DynamicMap4 signed_map4 = nm::make_dynamic_map_4bit(nm::MapSign::kSigned);
  const nm::DynamicMap4 unsigned_map4 = nm::make_dynamic_map_4bit(nm::MapSign::kUnsigned);
  DeviceBuffer maps(sizeof(float) * (2 * signed_map.values.size() + 2 * signed_map4.size()));
  float* map_ptr = maps.as<float>();
  const size_t m8 = signed_map.values.size(), m4 = signed_map4.size();
  FARTHING_CUDA_CHECK(cudaMemcpy(map_ptr, signed_map.values.data(), m8 * 4, cudaMemcpyHostToDevice));
  FARTHING_CUDA_CHECK(cudaMemcpy(map_ptr + m8, unsigned_map.values.data(), m8 * 4, cudaMemcpyHostToDevice));
  FARTHING_CUDA_CHECK(cudaMemcpy(map_ptr + 2 * m8, signed_map4.data(), m4 * 4, cudaMemcpyHostToDevice));
  FARTHING_CUDA_CHECK(cudaMemcpy(map_ptr + 2 * m8 + m4, unsigned_map4.data(), m4 * 4, cudaMemcpyHostToDevice));

  // The ceiling: a device-to-device copy of the gradient (2 bytes/param), before and after.
  auto time_copy = [&] {
    return cuda_time_best([&] {
      FARTHING_CUDA_CHECK(cudaMemcpyAsync(weights.as<void>(), grads.as<void>(), 2 * un, cudaMemcpyDeviceToDevice));
    }, options.min_seconds);
  };
  double copy_seconds = time_copy();

  // Where the step adds its diagnostics, and its block partials' scratch, as CudaBackend keeps them.
  DeviceBuffer sums(sizeof(kn::AdamWPartials)), scratch(kn::optim_scratch_bytes());
  std::vector<Row> rows;
  for (const Config& c : configs) {
    fill_device(weights.as<uint16_t>(), n, bench_weight_bf16);
    DeviceBuffer master(c.master == kn::MasterMode::kF32 ? 4 * un : 0);
    DeviceBuffer remainder(c.master == kn::MasterMode::kRemainder16 ? 2 * un : 0);
    DeviceBuffer m(moment_value_bytes(c.moments, un)), v(moment_value_bytes(c.moments, un));
    DeviceBuffer m_absmax(4 * moment_absmax_count(c.moments, un)), v_absmax(4 * moment_absmax_count(c.moments, un));
    if (c.master == kn::MasterMode::kF32) {
      fill_device(master.as<float>(), n, [](int64_t i) { return nm::bf16_to_f32(bench_weight_bf16(i)); });
    }
    for (const DeviceBuffer* b : {&remainder, &m, &v, &m_absmax, &v_absmax}) {
      if (b->bytes() > 0) FARTHING_CUDA_CHECK(cudaMemset(b->as<void>(), 0, b->bytes()));
    }
    kn::AdamWSegmentCuda seg;
    seg.n = un;
    seg.grad = grads.as<void>();
    seg.grad_format = kn::GradFormat::kBf16;
    seg.weight = weights.as<uint16_t>();
    seg.master = master.as<float>();
    seg.remainder = remainder.as<uint16_t>();
    seg.master_mode = c.master;
    seg.weight_rounding = c.rounding;
    seg.m = {c.moments, m.as<void>(), m_absmax.as<float>()};
    seg.v = {c.moments, v.as<void>(), v_absmax.as<float>()};
    seg.seed = 1234;
    seg.signed_map = map_ptr;
    seg.unsigned_map = map_ptr + m8;
    seg.signed_map4 = map_ptr + 2 * m8;
    seg.unsigned_map4 = map_ptr + 2 * m8 + m4;
    uint32_t step = 0;
    const double s = cuda_time_best([&] {
      seg.step = ++step;
      seg.scalars = nm::make_adamw_scalars(1e-5, 0.9, 0.999, 1e-8, 0.01, step, 1.0);
      kn::adamw_step_cuda(seg, sums.as<kn::AdamWPartials>(), scratch.as<void>(), nullptr);
    }, options.min_seconds);
    rows.push_back({c.name, bytes_moved_per_param(c), s});
  }
  copy_seconds = std::min(copy_seconds, time_copy());
  const double copy_gbps = 4.0 * double(n) / copy_seconds / 1e9;
  const std::string summary = cuda_device_summary();

  if (options.json) {
    std::printf("{\"suite\": \"optim\", \"device\": \"cuda:0\", \"gpu\": \"%s\", \"params\": %lld, \"copy_gbps\": %.3f, "
                "\"rows\": [", summary.c_str(), (long long)n, copy_gbps);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const double gbps = r.bytes_per_param * double(n) / r.seconds / 1e9;
      std::printf("%s{\"config\": \"%s\", \"bytes_per_param\": %.4f, \"seconds\": %.6f, \"params_per_s\": %.4g, "
                  "\"gbps\": %.3f, \"ratio_to_copy\": %.3f}", i ? ", " : "", r.name.c_str(), r.bytes_per_param,
                  r.seconds, double(n) / r.seconds, gbps, gbps / copy_gbps);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("farthing bench optim — cuda:0 (%s), %lld parameters, bf16 gradients\n", summary.c_str(), (long long)n);
  std::printf("copy ceiling: device-to-device copy of the gradient, %.1f GB/s (bytes read + written)\n\n", copy_gbps);
  std::printf("%-32s %10s %9s %12s %8s %8s\n", "configuration", "B/param", "ms/step", "Gparams/s", "GB/s", "x copy");
  for (const Row& r : rows) {
    const double gbps = r.bytes_per_param * double(n) / r.seconds / 1e9;
    std::printf("%-32s %10.3f %9.2f %12.2f %8.1f %8.2f\n", r.name.c_str(), r.bytes_per_param, r.seconds * 1e3,
                double(n) / r.seconds / 1e9, gbps, gbps / copy_gbps);
  }
  return 0;
}

#else

int run_optim_bench_cuda(const BenchOptions& options) {
  static_cast<void>(options);
  cuda_bench_unavailable("optim");
  return kBenchSkipped;
}

#endif

}  // namespace farthing::bench

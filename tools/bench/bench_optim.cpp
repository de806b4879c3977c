// bench_optim.cpp — `farthing bench optim`: the fused AdamW step (kernels/cpu/optim_cpu via
// framework/optim) for each state/master/rounding configuration on >= 100M parameters, next to
// memcpy bandwidth measured in the same run, and torch.optim.AdamW (foreach, and fused where
// the installed torch has it on CPU) on the same number of parameters in a subprocess.
//
// GB/s counts the bytes each step actually reads and writes once each: gradient (bf16),
// master (f32 or 16-bit remainders, read + write), moments (read + write; 8-bit: codes + absmax), the bf16 weight
// (read, for the unchanged-weights diagnostic, + write). Params/s compares across systems.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/optim/adamw.h"
#include "tools/bench/bench.h"

namespace farthing::bench {

namespace {

double time_best_of(const std::function<void()>& fn, double min_seconds) {
  fn();  // warm up: page faults, lazy init
  double best = 1e30, total = 0.0;
  int reps = 0;
  while (total < min_seconds || reps < 3) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    ++reps;
  }
  return best;
}


struct Config {
  const char* name;
  optim::StateFormat state;
  optim::MasterMode master;
  optim::WeightRounding rounding;
};

double bytes_moved_per_param(const Config& c) {
  const double moments = c.state == optim::StateFormat::kF32      ? 8.0
                         : c.state == optim::StateFormat::kBf16   ? 4.0
                         : c.state == optim::StateFormat::kBlock8 ? 2.0 + 8.0 / 256.0
                                                                  : 1.0 + 8.0 / 128.0;
  const double master = c.master == optim::MasterMode::kF32           ? 8.0
                        : c.master == optim::MasterMode::kRemainder16 ? 4.0
                                                                      : 0.0;
  return 2.0 /* grad */ + master + 2.0 * moments /* read + write */ + 4.0 /* weight read + write */;
}

struct Row {
  std::string name;
  double bytes_per_param;
  double seconds;
};

// torch.optim.AdamW on n fp32 parameters with the same thread count; prints "<mode> <seconds>"
// lines, "unsupported <mode>" or "no-torch".
const char* kTorchScript = R"PY(
import sys, time
try:
    import torch
except Exception:
    print("no-torch"); sys.exit(0)
n, threads, min_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
torch.set_num_threads(threads)
print("version", torch.__version__)
p = torch.nn.Parameter(torch.randn(n) * 0.02)
p.grad = torch.randn(n) * 1e-3
for mode in ("foreach", "fused"):
    try:
        opt = torch.optim.AdamW([p], lr=1e-5, weight_decay=0.01, foreach=(mode == "foreach"),
                                fused=(True if mode == "fused" else None))
        opt.step()
    except Exception as e:
        print("unsupported", mode); continue
    best, total, reps = 1e30, 0.0, 0
    while total < min_s or reps < 3:
        t0 = time.perf_counter(); opt.step(); s = time.perf_counter() - t0
        best = min(best, s); total += s; reps += 1
    print(mode, best)
    del opt
)PY";

std::vector<Row> run_torch(long long n, int threads, double min_seconds, std::string* version) {
  std::vector<Row> rows;
  char path[] = "/tmp/farthing_bench_optim_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return rows;
  const ssize_t written = write(fd, kTorchScript, std::strlen(kTorchScript));
  close(fd);
  if (written > 0) {
    const std::string cmd = "python3 " + std::string(path) + " " + std::to_string(n) + " " + std::to_string(threads) +
                            " " + std::to_string(min_seconds) + " 2>/dev/null";
    if (FILE* pipe = popen(cmd.c_str(), "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, pipe)) {
        char word[64] = {0};
        char text[128] = {0};
        double seconds = 0.0;
        if (std::sscanf(line, "version %127s", text) == 1) *version = text;
        else if (std::sscanf(line, "%63s %lf", word, &seconds) == 2) {
          // torch moves at least p (r+w), grad (r), exp_avg and exp_avg_sq (r+w), all fp32.
          rows.push_back({std::string("torch AdamW ") + word + " (fp32)", 28.0, seconds});
        }
      }
      pclose(pipe);
    }
  }
  std::remove(path);
  return rows;
}

}  // namespace

int run_optim_bench(const BenchOptions& options) {
  if (options.device == "cuda") return run_optim_bench_cuda(options);
  const int64_t n = options.elements > 0 ? options.elements : int64_t(100) * 1000 * 1000;
  const int threads = omp_get_max_threads();
  const Config configs[] = {
      {"fp32 state, fp32 master, RN", optim::StateFormat::kF32, optim::MasterMode::kF32, optim::WeightRounding::kNearest},
      {"bf16 state, fp32 master, RN", optim::StateFormat::kBf16, optim::MasterMode::kF32, optim::WeightRounding::kNearest},
      {"8-bit state, fp32 master, RN", optim::StateFormat::kBlock8, optim::MasterMode::kF32, optim::WeightRounding::kNearest},
      {"8-bit state, fp32 master, SR", optim::StateFormat::kBlock8, optim::MasterMode::kF32,
       optim::WeightRounding::kStochastic},
      {"8-bit state, remainder16, RN", optim::StateFormat::kBlock8, optim::MasterMode::kRemainder16,
       optim::WeightRounding::kNearest},
      {"8-bit state, no master, SR", optim::StateFormat::kBlock8, optim::MasterMode::kNone,
       optim::WeightRounding::kStochastic},
      {"4-bit state, no master, SR", optim::StateFormat::kBlock4, optim::MasterMode::kNone,
       optim::WeightRounding::kStochastic},
  };
  Buffer weights(Device::cpu(), size_t(n) * 2, MemoryCategory::kWeights);
  Buffer grads(Device::cpu(), size_t(n) * 2, MemoryCategory::kGrads);
  {
    auto* g = static_cast<uint16_t*>(grads.data());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t h = uint64_t(i) * 0x9E3779B97F4A7C15ull;
      const float x = (float((h >> 40) & 0xFFFF) / 32768.0f - 1.0f) * 1e-3f;  // about N(0, 1e-3) in spread
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      g[i] = uint16_t(bits >> 16);
    }
  }
  // The ceiling: the better of std::memcpy and a parallel memcpy, over the largest buffer here.
  const size_t copy_bytes = size_t(n) * 2;
  std::memset(weights.data(), 0, copy_bytes);
  const double memcpy_seconds =
      std::min(time_best_of([&] { std::memcpy(weights.data(), grads.data(), copy_bytes); }, options.min_seconds),
               time_best_of([&] { parallel_memcpy(weights.data(), grads.data(), copy_bytes); }, options.min_seconds));
  const double memcpy_gbps = 2.0 * double(copy_bytes) / memcpy_seconds / 1e9;

  std::vector<Row> rows;
  for (const Config& c : configs) {
    {
      auto* w = static_cast<uint16_t*>(weights.data());
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) w[i] = uint16_t(0x3C00u + (uint32_t(i) & 0x3FFu));  // ~0.008..0.016
    }
    optim::OptimizerConfig config;
    config.groups = {{"all", {1e-5, 0.9, 0.999, 1e-8, 0.01}, c.state}};
    config.ranges = {{"params", 0, uint64_t(n), 0}};
    config.master_mode = c.master;
    config.weight_rounding = c.rounding;
    optim::AdamW opt(config, {{0, uint64_t(n)}});
    const Tensor w = weights.view(DType::kBF16, Shape{n});
    const Tensor g = grads.view(DType::kBF16, Shape{n});
    if (c.master != optim::MasterMode::kNone) opt.init_master(0, w);
    const std::vector<Tensor> ws{w}, gs{g};
    const optim::GradReport report = opt.inspect_grads(gs);
    const double s = time_best_of([&] { opt.step(ws, gs, report, 1.0); }, options.min_seconds);
    rows.push_back({c.name, bytes_moved_per_param(c), s});
  }
  std::string torch_version;
  const std::vector<Row> torch_rows = run_torch(n, threads, options.min_seconds, &torch_version);
  const double fused_8bit_seconds = rows[2].seconds;

  if (options.json) {
    std::printf("{\"suite\": \"optim\", \"device\": \"cpu\", \"threads\": %d, \"params\": %lld, \"memcpy_gbps\": %.3f, "
                "\"torch\": \"%s\", \"rows\": [", threads, (long long)n, memcpy_gbps, torch_version.c_str());
    bool first = true;
    for (const std::vector<Row>* list : {static_cast<const std::vector<Row>*>(&rows), &torch_rows}) {
      for (const Row& r : *list) {
        const double gbps = r.bytes_per_param * double(n) / r.seconds / 1e9;
        std::printf("%s{\"config\": \"%s\", \"bytes_per_param\": %.4f, \"seconds\": %.6f, \"params_per_s\": %.4g, "
                    "\"gbps\": %.3f, \"ratio_to_memcpy\": %.3f}", first ? "" : ", ", r.name.c_str(), r.bytes_per_param,
                    r.seconds, double(n) / r.seconds, gbps, gbps / memcpy_gbps);
        first = false;
      }
    }
    std::printf("], \"speedup_8bit_vs_torch\": {");
    for (size_t i = 0; i < torch_rows.size(); ++i) {
      std::printf("%s\"%s\": %.3f", i ? ", " : "", torch_rows[i].name.c_str(), torch_rows[i].seconds / fused_8bit_seconds);
    }
    std::printf("}}\n");
    return 0;
  }
  std::printf("farthing bench optim — cpu, %d threads, %lld parameters\n", threads, (long long)n);
  std::printf("memcpy ceiling: %.2f GB/s (bytes read + written)\n\n", memcpy_gbps);
  std::printf("%-32s %10s %9s %12s %8s %10s\n", "configuration", "B/param", "ms/step", "Mparams/s", "GB/s", "x memcpy");
  for (const std::vector<Row>* list : {static_cast<const std::vector<Row>*>(&rows), &torch_rows}) {
    for (const Row& r : *list) {
      const double gbps = r.bytes_per_param * double(n) / r.seconds / 1e9;
      std::printf("%-32s %10.3f %9.1f %12.1f %8.2f %10.2f\n", r.name.c_str(), r.bytes_per_param, r.seconds * 1e3,
                  double(n) / r.seconds / 1e6, gbps, gbps / memcpy_gbps);
    }
  }
  if (torch_rows.empty()) {
    std::printf("\ntorch: not available (python3 -c 'import torch' failed); no peer comparison\n");
  } else {
    std::printf("\ntorch %s, same threads; step-time ratio torch / farthing 8-bit fused (RN):", torch_version.c_str());
    for (const Row& r : torch_rows) std::printf("  %s %.2fx", r.name.c_str() + 12, r.seconds / fused_8bit_seconds);
    std::printf("\n");
  }
  return 0;
}

}  // namespace farthing::bench

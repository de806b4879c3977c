// bench_common.cpp — the registry of benchmark suites and what several suites share.
#include "tools/bench/bench.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "framework/data/token_file.h"

namespace farthing::bench {

void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  const int threads = omp_get_max_threads();
  const size_t chunk = (bytes / size_t(threads) + 63) / 64 * 64;
#pragma omp parallel for schedule(static)
  for (int t = 0; t < threads; ++t) {
    const size_t begin = std::min(bytes, size_t(t) * chunk);
    const size_t end = std::min(bytes, begin + chunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

std::filesystem::path synthetic_token_file(const std::filesystem::path& dir, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int32_t& id : ids) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    id = int32_t(x % uint64_t(vocab));
  }
  const std::filesystem::path path = dir / "tokens.tok";
  data::write_token_file(path, ids, uint32_t(vocab));
  return path;
}

const std::vector<BenchSuite>& bench_suites() {
  static const std::vector<BenchSuite> suites = {
      {"numerics", "casts, stochastic-rounding casts, 8-bit block quantize/dequantize vs memcpy (or the device copy)",
       &run_numerics_bench, {"--device", "--elements", "--min-seconds"}},
      {"optim", "fused AdamW step per state/master/rounding configuration vs memcpy (or the device copy) and torch.optim.AdamW",
       &run_optim_bench, {"--device", "--elements", "--min-seconds"}},
      {"train", "a full training step (forward, backward, AdamW) vs the GEMM ceiling and PyTorch", &run_train_bench,
       {"--device", "--preset", "--seq", "--batch", "--min-seconds", "--torch-amp", "--profile-ops", "--torch-compile",
        "--packing"}},
      {"dist", "the trainer's ZeRO-1/2/3 step at this world size (run under mpirun -np N): time, memory, bytes sent",
       &run_dist_bench, {"--preset", "--seq", "--batch", "--out", "--profile", "--reduce-bucket-mib"}},
      {"gemm", "cuBLASLt bf16 GEMM at a preset's layer shapes and 8192^3 in TFLOP/s (--device cuda only)",
       &run_gemm_bench, {"--device", "--preset", "--seq", "--batch", "--min-seconds"}},
      {"ops", "every NnOps op at SmolLM2-135M and Llama-3.1-8B shapes vs the GEMM ceiling and the copy", &run_ops_bench,
       {"--device"}},
      {"precision", "the trainer under each numerics setting on one fine-tune: weight sticking, loss vs the fp32 "
       "reference, fp16 gradient underflow", &run_precision_bench,
       {"--device", "--quick", "--out", "--fp4", "--steps", "--seed", "--only", "--seq", "--batch"}},
  };
  return suites;
}

}  // namespace farthing::bench

// bench_common.cpp — the registry of benchmark suites.
#include "tools/bench/bench.h"

namespace farthing::bench {

const std::vector<BenchSuite>& bench_suites() {
  static const std::vector<BenchSuite> suites = {
      {"numerics", "casts, stochastic-rounding casts, 8-bit block quantize/dequantize vs memcpy",
       &run_numerics_bench},
      {"optim", "fused AdamW step per state/master/rounding configuration vs memcpy and torch.optim.AdamW",
       &run_optim_bench},
      {"train", "a model's forward+backward step (--preset --seq --batch) vs the GEMM ceiling and PyTorch",
       &run_train_bench},
  };
  return suites;
}

}  // namespace farthing::bench

// bench_numerics.cpp — placeholder replaced by the numerics suite.
#include "tools/bench/bench.h"
namespace farthing::bench {
int run_numerics_bench(const BenchOptions&) { return 1; }
}  // namespace farthing::bench

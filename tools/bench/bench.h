// bench.h — `farthing bench SUITE`: suites that measure farthing against its ceiling
// (memory bandwidth, GEMM rate) and its peers in the same run and print ratios.
// Benchmarks are never unit tests: timings live here, not in ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace farthing::bench {

struct BenchOptions {
  bool json = false;           // print one JSON document instead of the table
  double min_seconds = 0.3;    // time each measurement at least this long
  long long elements = 0;      // problem size override (0: the suite's default)
  int threads = 0;             // OpenMP threads (0: the runtime default)
  std::string preset;          // model preset (train suite; empty: the suite's default)
  long long seq = 0;           // tokens per sequence (train suite; 0: default)
  long long batch = 0;         // sequences per step (train suite; 0: default)
  bool torch_amp = false;      // train suite: run the bf16-autocast peer even where bf16 is emulated
  std::string device = "cpu";  // "cpu" or "cuda" (numerics, optim, train, ops and gemm suites; device 0)
  bool quick = false;          // precision suite: stories260K and short runs instead of SmolLM2-135M
  bool fp4 = false;            // precision suite: only the FP4 comparison (bf16, fp8 block, nvfp4 and its ablations, mxfp4)
  std::string only;            // precision suite --fp4: only the rows whose name contains this, beside bf16 compute
  long long steps = 0;         // precision suite: steps per trajectory (0: the study's)
  long long seed = 0;          // precision suite: train.seed of every run (0: 1234)
  std::string out;             // precision suite: where the report, JSON and plots go ("": its default);
                               // dist suite: a JSON file of this world size's links and compute
  std::string profile;         // dist suite: another run's --out file, whose compute predicts this one
  double reduce_bucket_mib = 0.0;  // dist suite: the runs' distributed.reduce_bucket_mib (> 0: reductions in flight)
  bool profile_ops = false;        // train suite: train.profile: ops, each row's step profile on stderr
  bool torch_compile = false;      // train suite on cuda: also the torch peer through torch.compile
  // train suite: data.packing of farthing's rows ("": the token file's default, stream). The
  // synthetic token file is one document, so under documents (split into sequence-sized pieces)
  // every sequence holds the same tokens as under stream, through the document path.
  std::string packing;
};

struct BenchSuite {
  const char* name;
  const char* summary;
  int (*run)(const BenchOptions& options);  // returns a process exit code
  // The options of BenchOptions it reads besides --json and --threads, which every suite takes;
  // `farthing bench SUITE` accepts (and its --help lists) these and no others.
  std::vector<std::string> options;
};

// memcpy split evenly over the OpenMP threads: the copy ceiling the suites compare against.
void parallel_memcpy(void* dst, const void* src, size_t bytes);

// dir/tokens.tok: n ids drawn from [0, vocab) by a fixed xorshift recurrence (synthetic
// training data for the suites that run the trainer; no tokenizer needed).
std::filesystem::path synthetic_token_file(const std::filesystem::path& dir, int64_t n, int64_t vocab);

// All suites, in the order `farthing bench --help` lists them.
const std::vector<BenchSuite>& bench_suites();

int run_numerics_bench(const BenchOptions& options);
int run_optim_bench(const BenchOptions& options);
int run_train_bench(const BenchOptions& options);
int run_dist_bench(const BenchOptions& options);
int run_gemm_bench(const BenchOptions& options);
int run_ops_bench(const BenchOptions& options);  // bench_ops.cpp: --device cpu or cuda
int run_precision_bench(const BenchOptions& options);  // bench_precision.cpp: --quick, --out DIR
// The --device cuda forms (bench_numerics_cuda.cpp, bench_optim_cuda.cpp): exit 77 without a GPU.
int run_numerics_bench_cuda(const BenchOptions& options);
int run_optim_bench_cuda(const BenchOptions& options);

}  // namespace farthing::bench

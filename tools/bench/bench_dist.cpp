// bench_dist.cpp — `farthing bench dist`: the trainer's ZeRO step at this world size, for
// stages 1 and 2, on a preset with random weights and synthetic tokens: step time, tokens/s,
// peak memory per rank by category (the tracker), and the bytes this rank sent in ZeRO's
// collectives per step against the theoretical volume of a ring algorithm:
//   stage 1: all-reduce of fp32 gradients 2·(N−1)/N · 4P, then all-gather of bf16 weights (N−1)/N · 2P
//   stage 2: reduce-scatter of fp32 gradients (N−1)/N · 4P, then the same all-gather
//   stage 3: the reduce-scatter, and bf16 weights gathered per unit in forward and again in
//            backward, about (N−1)/N · 2 · 2P
// (P: the padded parameter count). Run it once per world size:
//   farthing bench dist --preset gpt2-124m --seq 256 --batch 1
//   mpirun -np 2 farthing bench dist --preset gpt2-124m --seq 256 --batch 1
// Relies on: framework/run/train/trainer.h. Not a test: numbers only.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/run/train/trainer.h"
#include "models/common/presets.h"
#include "tools/bench/bench.h"

namespace farthing::bench {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

}  // namespace

int run_dist_bench(const BenchOptions& options) {
  auto comm = make_world_communicator();
  const int world = comm->world_size(), rank = comm->rank();
  const std::string preset = options.preset.empty() ? "gpt2-124m" : options.preset;
  const int64_t seq = options.seq > 0 ? options.seq : 256;
  const int64_t batch = options.batch > 0 ? options.batch : 1;
  const int steps = 3;
  const models::ModelConfig config = models::preset_config(preset);

  // Every rank writes the same synthetic file into its own folder (no shared filesystem assumed).
  const fs::path dir = fs::temp_directory_path() / ("farthing_bench_dist_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path tokens = synthetic_token_file(dir, (steps + 2) * world * batch * (seq + 1) + seq + 1, config.vocab_size);

  nlohmann::json rows = nlohmann::json::array();
  for (int stage : {1, 2, 3}) {
    recipe::RunConfig rc;
    rc.model.preset = preset;
    rc.data.train = tokens.string();
    rc.data.format = recipe::DataFormat::kTokens;
    rc.data.seq_len = seq;
    rc.data.eval_fraction = 0.0;
    rc.data.shuffle = false;
    rc.optimizer.state = optim::StateFormat::kBlock8;
    rc.optimizer.master = optim::MasterMode::kNone;
    rc.optimizer.weight_rounding = optim::WeightRounding::kStochastic;
    rc.schedule.kind = optim::LrScheduleKind::kConstant;
    rc.train.steps = steps + 1;
    rc.train.micro_batch = batch;
    rc.train.precision = recipe::Precision::kFp32;
    rc.checkpoint.run_dir = (dir / "run").string();
    rc.distributed.zero_stage = stage;
    memory_tracker(Device::cpu()).reset_peaks();
    train::Trainer trainer(rc, *comm, train::TrainerOutput{.progress = false});
    trainer.train_step();  // warm-up: primitive caches, first touches
    const int64_t sent_before = trainer.bytes_communicated();
    comm->barrier();
    const auto t0 = Clock::now();
    int64_t step_tokens = 0;
    for (int s = 0; s < steps; ++s) step_tokens = trainer.train_step().tokens;
    comm->barrier();
    const double step_s = std::chrono::duration<double>(Clock::now() - t0).count() / steps;
    const double sent = double(trainer.bytes_communicated() - sent_before) / steps;
    const double P = double(trainer.model().layout().total_elems());
    const double N = double(world);
    const double grads = stage == 1 ? 2.0 * (N - 1) / N * 4 * P : (N - 1) / N * 4 * P;
    // Stages 1-2 all-gather the new bf16 weights once; stage 3 gathers each block's bf16 weights
    // twice (forward, backward; embedding and head once), about 2 · 2P.
    const double weights = stage == 3 ? (N - 1) / N * 2 * 2 * P : (N - 1) / N * 2 * P;
    const double theory = grads + weights;
    const MemorySnapshot mem = memory_tracker(Device::cpu()).snapshot();
    nlohmann::json row = {{"stage", stage},
                          {"world_size", world},
                          {"rank", rank},
                          {"step_seconds", step_s},
                          {"tokens_per_s", double(step_tokens) / step_s},
                          {"sent_bytes_per_step", sent},
                          {"theoretical_bytes_per_step", theory},
                          {"peak_bytes", mem.total_peak_bytes}};
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      row["peak_" + std::string(memory_category_name(MemoryCategory(c)))] = mem.peak_bytes[size_t(c)];
    }
    rows.push_back(row);
  }
  fs::remove_all(dir);

  // Rank 0 prints every rank's rows (gathered as text, in rank order).
  const std::string mine = rows.dump();
  int64_t length = int64_t(mine.size()), longest = length;
  comm->all_reduce(Tensor(&longest, DType::kI64, Shape{1}), ReduceOp::kMax);
  std::vector<uint8_t> padded(size_t(longest), ' '), all(size_t(longest * world));
  std::copy(mine.begin(), mine.end(), padded.begin());
  comm->all_gather(Tensor(all.data(), DType::kU8, Shape{longest * world}), Tensor(padded.data(), DType::kU8, Shape{longest}));
  if (rank != 0) return 0;
  nlohmann::json every = nlohmann::json::array();
  for (int r = 0; r < world; ++r) {
    for (const auto& row : nlohmann::json::parse(std::string(all.begin() + r * longest, all.begin() + (r + 1) * longest)))
      every.push_back(row);
  }
  if (options.json) {
    std::printf("%s\n", every.dump(2).c_str());
    return 0;
  }
  std::printf("farthing bench dist: %s, %lld x %lld tokens per rank, fp32 compute, 8-bit AdamW + SR, %d ranks, "
              "%d threads per rank\n\n",
              preset.c_str(), (long long)batch, (long long)seq, world, omp_get_max_threads());
  std::printf("%-5s %-4s %9s %9s %10s %10s %10s %10s %10s %12s %12s %6s\n", "stage", "rank", "step s", "tok/s",
              "peak MiB", "weights", "grads", "opt+master", "comm buf", "sent MiB", "theory MiB", "ratio");
  for (const auto& r : every) {
    const double mib = 1024.0 * 1024.0;
    const double theory = r["theoretical_bytes_per_step"].get<double>();
    std::printf("%-5d %-4d %9.2f %9.0f %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f %12.1f %6s\n", r["stage"].get<int>(),
                r["rank"].get<int>(), r["step_seconds"].get<double>(), r["tokens_per_s"].get<double>(),
                r["peak_bytes"].get<double>() / mib, r["peak_weights"].get<double>() / mib,
                r["peak_grads"].get<double>() / mib,
                (r["peak_optimizer_state"].get<double>() + r["peak_master"].get<double>()) / mib,
                r["peak_comm_buffers"].get<double>() / mib, r["sent_bytes_per_step"].get<double>() / mib, theory / mib,
                theory > 0 ? std::to_string(r["sent_bytes_per_step"].get<double>() / theory).substr(0, 5).c_str() : "-");
  }
  std::printf("\nsent: bytes this rank sent in ZeRO's collectives per step (it receives as much); theory: a ring "
              "algorithm's volume per rank.\nStages 1-2 keep full fp32 parameters and gradients on every rank and "
              "shard the optimizer state and master; stage 3 keeps only each rank's owned part of everything,\n"
              "plus the units gathered at the moment (peak includes those and the activations).\n");
  return 0;
}

}  // namespace farthing::bench

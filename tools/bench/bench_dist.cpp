// bench_dist.cpp — `farthing bench dist`: the trainer's ZeRO step at this world size, for
// stages 1-3, on a preset with random weights and synthetic tokens: step time, tokens/s, peak
// memory per rank by category (the tracker), and the bytes this rank sent in ZeRO's collectives
// per step against the theoretical volume of a ring algorithm:
//   stage 1: all-reduce of fp32 gradients 2·(N−1)/N · 4P, then all-gather of bf16 weights (N−1)/N · 2P
//   stage 2: reduce-scatter of fp32 gradients (N−1)/N · 4P, then the same all-gather
//   stage 3: the reduce-scatter, and bf16 weights gathered per unit in forward and again in
//            backward, about (N−1)/N · 2 · 2P
// (P: the padded parameter count).
// Then it checks the scaling model (train/plan/scaling_model.h) against the same steps:
// it measures this communicator's links (each collective at four sizes, latency and bandwidth
// fitted), splits the steps' time into compute per turn and time blocked in collectives
// (step_timeline.h), and prints the model's step time and communication beside the measured ones,
// from this run's own compute (each turn's slowest rank: every collective waits for it) and,
// with --profile, from another run's (np 1's: a prediction
// across world sizes). --out FILE writes the links and the compute per stage, for --profile and
// for `farthing plan --interconnect FILE --profile FILE`. --reduce-bucket-mib M runs the steps with
// gradient reductions left in flight (distributed.reduce_bucket_mib) and compares them with the
// overlapped schedule instead of the serial one. Run it once per world size:
//   OMP_NUM_THREADS=1 farthing bench dist --preset gpt2-124m --out np1.json
//   OMP_NUM_THREADS=1 mpirun -np 2 farthing bench dist --preset gpt2-124m --profile np1.json --out np2.json
// Relies on: train/loop/trainer.h, train/plan/scaling_model.h. Not a test: numbers only.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "train/plan/scaling_model.h"
#include "train/plan/scaling_profile.h"
#include "train/loop/trainer.h"
#include "models/common/presets.h"
#include "tools/bench/bench.h"

namespace farthing::bench {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using train::Collective;

// Each collective over f32 buffers of 4 whole sizes (1-64 MiB), the median of 3 after a warm-up,
// fitted to latency + bytes / bandwidth. Every rank takes part; every rank gets the same fit
// from rank 0's times (broadcast through an all-reduce of rank 0's values).
train::Interconnect measure_links(Communicator& comm) {
  const int N = comm.world_size();
  train::Interconnect links{"measured", "this communicator, measured by farthing bench dist", {}, {}, {}};
  if (N == 1) return links;
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce}) {
    std::vector<std::pair<double, double>> samples;
    for (int64_t mib : {1, 4, 16, 64}) {
      const int64_t whole = (mib << 20) / 4 / N * N;  // f32 elements, a multiple of N
      Buffer big(Device::cpu(), size_t(whole) * 4, MemoryCategory::kCommBuffers);
      Buffer part(Device::cpu(), size_t(whole / N) * 4, MemoryCategory::kCommBuffers);
      std::fill_n(static_cast<float*>(big.data()), whole, 1.0f);
      std::fill_n(static_cast<float*>(part.data()), whole / N, 1.0f);
      const Tensor b = big.view(DType::kF32, Shape{whole}), q = part.view(DType::kF32, Shape{whole / N});
      std::vector<double> times;
      for (int rep = 0; rep < 4; ++rep) {
        comm.barrier();
        const auto t0 = Clock::now();
        if (c == Collective::kAllGather) comm.all_gather(b, q);
        else if (c == Collective::kReduceScatter) comm.reduce_scatter(q, b, ReduceOp::kSum);
        else comm.all_reduce(b, ReduceOp::kSum);
        if (rep > 0) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      double mine = comm.rank() == 0 ? times[times.size() / 2] : 0.0;
      comm.all_reduce(Tensor(&mine, DType::kF64, Shape{1}), ReduceOp::kSum);
      samples.push_back({double(whole) * 4.0, mine});
    }
    const train::LinkCost fit = train::fit_link(c, N, samples);
    (c == Collective::kAllGather ? links.all_gather : c == Collective::kReduceScatter ? links.reduce_scatter
                                                                                      : links.all_reduce) = fit;
  }
  return links;
}

// The mean of several steps' measurements.
train::MeasuredStep mean_of(const std::vector<train::MeasuredStep>& steps) {
  train::MeasuredStep m = steps.front();
  for (size_t i = 1; i < steps.size(); ++i) {
    const train::MeasuredStep& s = steps[i];
    for (size_t k = 0; k < m.compute.turn_seconds.size(); ++k) m.compute.turn_seconds[k] += s.compute.turn_seconds[k];
    m.compute.optimizer_seconds += s.compute.optimizer_seconds;
    m.compute.other_seconds += s.compute.other_seconds;
    m.step_seconds += s.step_seconds;
    m.comm_seconds += s.comm_seconds;
  }
  const double n = double(steps.size());
  for (double& t : m.compute.turn_seconds) t /= n;
  m.compute.optimizer_seconds /= n;
  m.compute.other_seconds /= n;
  m.step_seconds /= n;
  m.comm_seconds /= n;
  return m;
}

}  // namespace

int run_dist_bench(const BenchOptions& options) {
  auto comm = make_world_communicator();
  const int world = comm->world_size(), rank = comm->rank();
  const std::string preset = options.preset.empty() ? "gpt2-124m" : options.preset;
  const int64_t seq = options.seq > 0 ? options.seq : 256;
  const int64_t batch = options.batch > 0 ? options.batch : 1;
  const int steps = 5;
  const models::ModelConfig config = models::preset_config(preset);
  std::optional<train::ScalingProfile> profile;  // another run's --out: its compute predicts this world size's
  if (!options.profile.empty()) {
    profile = train::read_scaling_profile(options.profile);
    FARTHING_CHECK(profile->preset == preset && profile->seq == seq && profile->batch == batch,
                   "bench dist --profile ", options.profile, " measured ", profile->preset, " at seq ", profile->seq,
                   " batch ", profile->batch, ", not ", preset, " at seq ", seq, " batch ", batch);
  }
  train::ScalingProfile mine_out;  // what --out writes
  mine_out.preset = preset;
  mine_out.seq = seq;
  mine_out.batch = batch;
  mine_out.threads = omp_get_max_threads();
  mine_out.world_size = world;

  // Every rank writes the same synthetic file into its own folder (no shared filesystem assumed).
  const fs::path dir = fs::temp_directory_path() / ("farthing_bench_dist_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path tokens = synthetic_token_file(dir, (steps + 2) * world * batch * (seq + 1) + seq + 1, config.vocab_size);
  const train::Interconnect links = measure_links(*comm);

  const train::Overlap overlap = options.reduce_bucket_mib > 0.0 ? train::Overlap::kStreams : train::Overlap::kNone;
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
    rc.distributed.reduce_bucket_mib = options.reduce_bucket_mib;
    memory_tracker(Device::cpu()).reset_peaks();
    train::StepTimeline timeline;
    train::Trainer trainer(rc, *comm, train::TrainerOutput{.progress = false, .timeline = &timeline});
    const models::UnitSchedule schedule = models::Transformer::unit_schedule(trainer.model().spec());
    mine_out.param_count = trainer.model().layout().param_count();
    const dist::ZeroLayout& zero = trainer.zero_layout();
    const dist::ParamStoreOptions& so = trainer.store_options();
    trainer.train_step();  // warm-up: primitive caches, first touches
    const int64_t sent_before = trainer.bytes_communicated();
    comm->barrier();
    const auto t0 = Clock::now();
    int64_t step_tokens = 0;
    std::vector<train::MeasuredStep> measured;
    for (int s = 0; s < steps; ++s) {
      step_tokens = trainer.train_step().tokens;
      measured.push_back(train::measured_step(schedule, timeline, zero.owned_elems()));
    }
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

    // The scaling model on this run: the schedule the trainer ran (serial, or with reductions in
    // flight the overlapped one: the MPI worker thread is the communication stream), these
    // links, and the slowest rank's compute in each turn (every collective waits for it).
    train::MeasuredStep m = mean_of(measured);
    std::vector<double> slowest = m.compute.turn_seconds;
    slowest.push_back(m.compute.optimizer_seconds);
    slowest.push_back(m.compute.other_seconds);
    comm->all_reduce(Tensor(slowest.data(), DType::kF64, Shape{int64_t(slowest.size())}), ReduceOp::kMax);
    m.compute.other_seconds = slowest.back();
    slowest.pop_back();
    m.compute.optimizer_seconds = slowest.back();
    slowest.pop_back();
    m.compute.turn_seconds = slowest;
    const train::ZeroSetup setup{.zero_stage = stage, .gather_f32 = so.compute_from_master,
                                 .optimizer_in_backward = so.optimizer_in_backward};
    const train::StepPrediction own = train::predict_step(schedule, zero, setup, m.compute, links, overlap);
    nlohmann::json row = {{"stage", stage},
                          {"world_size", world},
                          {"rank", rank},
                          {"step_seconds", step_s},
                          {"tokens_per_s", double(step_tokens) / step_s},
                          {"sent_bytes_per_step", sent},
                          {"theoretical_bytes_per_step", theory},
                          {"model_bytes_per_step", own.bytes_sent},
                          {"peak_bytes", mem.total_peak_bytes},
                          {"measured_step_seconds", m.step_seconds},
                          {"measured_comm_seconds", m.comm_seconds},
                          {"compute_seconds", std::accumulate(m.compute.turn_seconds.begin(), m.compute.turn_seconds.end(), 0.0) *
                                                  double(m.compute.passes) +
                                              m.compute.optimizer_seconds + m.compute.other_seconds},
                          {"predicted_step_seconds", own.step_seconds},
                          // What the rank waits for: all of it when serial, the exposed part when overlapped
                          // (the time inside collectives measures the same: their issue and waits).
                          {"predicted_comm_seconds", own.exposed_seconds}};
    if (profile) {
      const train::StepPrediction from =
          train::predict_step(schedule, zero, setup, profile->compute_at(stage), links, overlap);
      row["profile_world_size"] = profile->world_size;
      row["predicted_from_profile_step_seconds"] = from.step_seconds;
    }
    mine_out.stages.push_back(stage);
    mine_out.compute.push_back(m.compute);
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
  if (!options.out.empty()) {  // the links and the slowest rank's compute per stage
    mine_out.links = links;
    train::write_scaling_profile(options.out, mine_out);
  }
  if (options.json) {
    std::printf("%s\n", every.dump(2).c_str());
    return 0;
  }
  std::printf("farthing bench dist: %s, %lld x %lld tokens per rank, fp32 compute, 8-bit AdamW + SR, %d ranks, "
              "%d threads per rank, distributed.reduce_bucket_mib %g\n\n",
              preset.c_str(), (long long)batch, (long long)seq, world, omp_get_max_threads(), options.reduce_bucket_mib);
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

  if (world > 1) {
    std::printf("\nlinks measured here (latency per ring step, bandwidth per rank):");
    for (auto [name, l] : {std::pair{"all-gather", links.all_gather}, std::pair{"reduce-scatter", links.reduce_scatter},
                           std::pair{"all-reduce", links.all_reduce}}) {
      std::printf("  %s %.1f us, %.2f GB/s;", name, l.latency_s * 1e6, l.bytes_per_s / 1e9);
    }
    std::printf("\n");
  }
  std::printf("\nscaling model (train/plan/scaling_model.h, %s schedule) against the measured steps:\n",
              overlap == train::Overlap::kStreams ? "overlapped" : "serial");
  std::printf("%-5s %-4s %10s %10s %7s %10s %10s %7s %10s %10s %7s\n", "stage", "rank", "step s", "model s", "error",
              "comm s", "model s", "error", "compute s", "from np", "error");
  for (const auto& r : every) {
    const double step = r["measured_step_seconds"].get<double>(), pred = r["predicted_step_seconds"].get<double>();
    const double comm_s = r["measured_comm_seconds"].get<double>(), comm_p = r["predicted_comm_seconds"].get<double>();
    const double compute = r["compute_seconds"].get<double>();
    std::string from = "-", from_err = "-";
    if (r.contains("predicted_from_profile_step_seconds")) {
      const double f = r["predicted_from_profile_step_seconds"].get<double>();
      char text[64];
      std::snprintf(text, sizeof text, "%.3f (%d)", f, r["profile_world_size"].get<int>());
      from = text;
      std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * (f / step - 1.0));
      from_err = text;
    }
    char comm_err[32] = "-";
    if (comm_s > 0) std::snprintf(comm_err, sizeof comm_err, "%+.1f%%", 100.0 * (comm_p / comm_s - 1.0));
    std::printf("%-5d %-4d %10.3f %10.3f %+6.1f%% %10.3f %10.3f %7s %10.3f %10s %7s\n", r["stage"].get<int>(),
                r["rank"].get<int>(), step, pred, 100.0 * (pred / step - 1.0), comm_s, comm_p, comm_err, compute,
                from.c_str(), from_err.c_str());
  }
  std::printf("\nstep s: the recorded steps' mean; comm s: time this rank spent inside ZeRO's collectives (the "
              "passes' and the weights' publication: issuing them and waiting for them); model: this run's compute "
              "(the rest; each turn's slowest rank) plus the model's collectives on the links above, and the part "
              "of them the rank waits for (all when serial, the exposed part when overlapped); from np: another "
              "run's compute (--profile) with the same links.\n");
  return 0;
}

}  // namespace farthing::bench

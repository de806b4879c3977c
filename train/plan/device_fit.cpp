// device_fit.cpp — see device_fit.h.
#include "train/plan/device_fit.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <tuple>

#include "framework/backend/backend.h"
#include "framework/core/error.h"
#include "train/loop/train_device.h"
#include "train/plan/memory_estimate.h"

namespace farthing::train {

namespace {

constexpr int64_t kGiB = int64_t(1) << 30;
constexpr int64_t kSmallestChunk = 64;
// Paper speeds this close count as the same (fit_to_device's tie-break).
constexpr double kPaperTie = 0.01;

// The chunk sizes tried for a micro-batch of `rows` logits rows: all of them, then powers of two
// below that down to kSmallestChunk.
std::vector<int64_t> chunk_sizes(int64_t rows) {
  std::vector<int64_t> sizes{rows};
  int64_t p = 1;
  while (p * 2 < rows) p *= 2;
  for (; p >= kSmallestChunk; p /= 2) {
    if (p < rows) sizes.push_back(p);
  }
  return sizes;
}

}  // namespace

const FitDevice* fit_device(const std::string& name) {
  // Totals as CUDA reports them (cudaMemGetInfo), a little under the boards' nominal 80, 141 and
  // 24 GB: H200 as the GPU check's visits saw it; H100 SXM and RTX 4090 as commonly reported.
  static const FitDevice kDevices[] = {
      {"h100", int64_t(79.2 * double(kGiB)), roofline_device("h100")},
      {"h200", int64_t(139.8 * double(kGiB)), roofline_device("h200")},
      {"rtx4090", int64_t(23.6 * double(kGiB)), roofline_device("rtx4090")},
  };
  for (const FitDevice& d : kDevices) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

recipe::RunConfig with_candidate(const recipe::RunConfig& config, const FitCandidate& c) {
  recipe::RunConfig out = config;
  out.train.micro_batch = c.micro_batch;
  out.train.grad_accum = c.grad_accum;
  out.model.activation_checkpointing = c.checkpointing;
  out.model.loss_chunk_rows = c.loss_chunk_rows;
  return out;
}

FitResult fit_to_device(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                        int64_t budget_bytes, const RooflineDevice& rates) {
  FitResult result;
  result.budget_bytes = budget_bytes;
  const int64_t sequences = config.train.micro_batch * config.train.grad_accum;  // per rank, per step
  const bool fused = config.train.optimizer_in_backward;  // one micro-batch per step: no other cut
  std::vector<int64_t> cuts;  // micro-batches: the powers of two dividing the batch, and the recipe's own
  for (int64_t mb = 1; mb <= sequences; mb *= 2) {
    if (sequences % mb == 0) cuts.push_back(mb);
  }
  if (std::find(cuts.begin(), cuts.end(), config.train.micro_batch) == cuts.end()) cuts.push_back(config.train.micro_batch);
  std::sort(cuts.begin(), cuts.end());
  for (int64_t mb : cuts) {
    if (fused && mb != sequences) continue;
    for (models::Checkpointing ck : {models::Checkpointing::kNone, models::Checkpointing::kPerBlock}) {
      for (int64_t chunk : chunk_sizes(mb * config.data.seq_len)) {
        FitCandidate c{.micro_batch = mb, .grad_accum = sequences / mb, .loss_chunk_rows = chunk, .checkpointing = ck};
        const recipe::RunConfig candidate = with_candidate(config, c);
        const MemoryEstimate estimate = estimate_memory(candidate, model, world_size);
        c.peak_bytes = estimate.peak_bytes;
        c.fits = c.peak_bytes <= budget_bytes;
        const RooflineStep step = roofline_step(roofline_inputs(candidate, model, estimate));
        const double tokens = double(sequences * config.data.seq_len) * double(world_size);
        c.tokens_per_s = tokens / roofline_step_seconds(step, rates, false);
        result.tried.push_back(c);
      }
    }
  }
  // The roofline cannot tell apart cuts whose GEMMs are all compute-bound: among the candidates
  // within kPaperTie of the fastest, the largest micro-batch and then the largest loss chunk (fewer,
  // larger GEMMs, which run nearer the roofline on a real GPU), then the smaller peak.
  double fastest = 0.0;
  for (const FitCandidate& c : result.tried) {
    if (c.fits) fastest = std::max(fastest, c.tokens_per_s);
  }
  for (size_t i = 0; i < result.tried.size(); ++i) {
    const FitCandidate& c = result.tried[i];
    if (!c.fits || c.tokens_per_s < (1.0 - kPaperTie) * fastest) continue;
    if (!result.chosen) {
      result.chosen = i;
      continue;
    }
    const FitCandidate& best = result.tried[*result.chosen];
    const auto key = [](const FitCandidate& x) { return std::tuple(x.micro_batch, x.loss_chunk_rows, -x.peak_bytes); };
    if (key(c) > key(best)) result.chosen = i;
  }
  return result;
}

std::string fit_table(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                      const FitDevice& device, const FitResult& result) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  const auto ck_name = [](models::Checkpointing c) { return c == models::Checkpointing::kPerBlock ? "per_block" : "none"; };
  add("\nFit to one %s per rank (%s of memory, planning for %.0f%%: %s), %s, %lld sequences of %lld tokens per "
      "rank and step, world size %d.\nPeak: farthing plan's estimate. Speed: the roofline at the %s's datasheet rates "
      "(an upper bound, the same for every row).\n\n",
      device.name, format_bytes(device.memory_bytes).c_str(), 100.0 * kDeviceMemoryShare,
      format_bytes(result.budget_bytes).c_str(), model.name.c_str(),
      (long long)(config.train.micro_batch * config.train.grad_accum), (long long)config.data.seq_len, world_size,
      device.name);
  add("  %-11s %-10s %-10s %-11s %12s %6s %16s\n", "micro_batch", "grad_accum", "recompute", "loss chunk", "peak", "fits",
      "tokens/s (paper)");
  // Per (micro_batch, checkpointing): the fastest fitting candidate, else the one with the smallest peak.
  std::vector<size_t> shown;
  for (size_t i = 0; i < result.tried.size(); ++i) {
    const FitCandidate& c = result.tried[i];
    auto same_cut = [&](size_t j) {
      return result.tried[j].micro_batch == c.micro_batch && result.tried[j].checkpointing == c.checkpointing;
    };
    auto it = std::find_if(shown.begin(), shown.end(), same_cut);
    if (it == shown.end()) {
      shown.push_back(i);
      continue;
    }
    const FitCandidate& s = result.tried[*it];
    const bool better = c.fits ? (!s.fits || c.tokens_per_s > s.tokens_per_s) : (!s.fits && c.peak_bytes < s.peak_bytes);
    if (better) *it = i;
  }
  for (size_t i : shown) {
    const FitCandidate& c = result.tried[i];
    add("  %-11lld %-10lld %-10s %-11lld %12s %6s %16.0f%s\n", (long long)c.micro_batch, (long long)c.grad_accum,
        ck_name(c.checkpointing), (long long)c.loss_chunk_rows, format_bytes(c.peak_bytes).c_str(), c.fits ? "yes" : "no",
        c.tokens_per_s, result.chosen && *result.chosen == i ? "  <- chosen" : "");
  }
  if (!result.chosen) {
    add("\nNothing fits: even the smallest peak above needs more than %s. Shrink data.seq_len, shard over more "
        "ranks (--world-size, ZeRO 2-3), or use leaner optimizer state (farthing plan --help).\n",
        format_bytes(result.budget_bytes).c_str());
    return out;
  }
  const FitCandidate& c = result.tried[*result.chosen];
  add("\nChosen: train.micro_batch %lld, train.grad_accum %lld, model.activation_checkpointing %s, "
      "model.loss_chunk_rows %lld:\n  the fastest on paper whose planned peak (%s) fits %s.\n",
      (long long)c.micro_batch, (long long)c.grad_accum, ck_name(c.checkpointing), (long long)c.loss_chunk_rows,
      format_bytes(c.peak_bytes).c_str(), format_bytes(result.budget_bytes).c_str());
  // The recipe as written, for comparison.
  const auto as_written = std::find_if(result.tried.begin(), result.tried.end(), [&](const FitCandidate& t) {
    return t.micro_batch == config.train.micro_batch && t.checkpointing == config.model.activation_checkpointing &&
           t.loss_chunk_rows == std::min(config.model.loss_chunk_rows, config.train.micro_batch * config.data.seq_len);
  });
  if (as_written != result.tried.end()) {
    add("  The recipe as written: peak %s (%s), %.0f tokens/s on paper: the choice is %.2fx that.\n",
        format_bytes(as_written->peak_bytes).c_str(), as_written->fits ? "fits" : "does not fit",
        as_written->tokens_per_s, c.tokens_per_s / as_written->tokens_per_s);
  }
  if (c.checkpointing == models::Checkpointing::kPerBlock) {
    const bool none_fits = std::any_of(result.tried.begin(), result.tried.end(), [](const FitCandidate& t) {
      return t.fits && t.checkpointing == models::Checkpointing::kNone;
    });
    add(none_fits ? "  Recompute none also fits, but is slower on paper at the sizes that fit.\n"
                  : "  Without recomputation nothing fits at this batch: every row with recompute none needs more "
                    "memory.\n");
  }
  return out;
}

int64_t fit_loss_chunk_rows(const recipe::RunConfig& config, const models::ModelConfig& model, int world_size,
                            int64_t budget_bytes) {
  recipe::RunConfig candidate = config;
  for (int64_t chunk : chunk_sizes(config.train.micro_batch * config.data.seq_len)) {
    candidate.model.loss_chunk_rows = chunk;
    if (estimate_memory(candidate, model, world_size).peak_bytes <= budget_bytes) return chunk;
  }
  return kSmallestChunk;
}

std::function<int64_t(const recipe::RunConfig&, const models::ModelConfig&)> auto_loss_chunk_rows(Communicator& comm) {
  return [&comm](const recipe::RunConfig& config, const models::ModelConfig& model) {
    const Device device = resolve_train_device(config.train.device, comm.local_rank());
    const int64_t budget = training_memory_budget(device);
    // The smallest over the ranks, as the max of its negation (the communicators reduce by sum and max).
    int64_t negated = -fit_loss_chunk_rows(config, model, comm.world_size(), budget);
    comm.all_reduce(Tensor(&negated, DType::kI64, Shape{1}), ReduceOp::kMax);
    const int64_t rows = -negated;
    if (comm.rank() == 0) {
      std::fprintf(stderr, "farthing: model.loss_chunk_rows 0 (auto): %lld rows, the largest whose planned peak fits "
                           "%s (the plan's budget on %s)\n",
                   (long long)rows, format_bytes(budget).c_str(), device.name().c_str());
    }
    return rows;
  };
}

double host_memory_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0.0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

int64_t training_memory_budget(Device device) {
  if (device.kind == DeviceKind::kCuda) {
    return int64_t(kDeviceMemoryShare * double(cuda_device_memory_of(device.index).free_bytes));
  }
  const double available = host_memory_available_bytes();
  FARTHING_CHECK(available > 0.0, "could not read MemAvailable from /proc/meminfo to size model.loss_chunk_rows 0 "
                 "(auto); set a number");
  return int64_t(kHostMemoryShare * available);
}

}  // namespace farthing::train

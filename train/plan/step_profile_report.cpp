// step_profile_report.cpp — see step_profile_report.h.
#include "train/plan/step_profile_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "framework/backend/op_profiler.h"
#include "framework/core/error.h"
#include "train/loop/gemm_plan_log.h"
#include "train/plan/memory_estimate.h"

namespace farthing::train {

namespace {

// The span kinds (framework/backend/op_profiler.h's op_kind) that a roofline row's calls are.
const char* kind_of(RooflineOp op) {
  switch (op) {
    case RooflineOp::kGemm: return op_kind::kGemm;
    case RooflineOp::kNormForward: return op_kind::kNormForward;
    case RooflineOp::kNormBackward: return op_kind::kNormBackward;
    case RooflineOp::kRope: return op_kind::kRope;
    case RooflineOp::kAttentionForward: return op_kind::kAttentionForward;
    case RooflineOp::kAttentionBackward: return op_kind::kAttentionBackward;
    case RooflineOp::kResidualAdd: return op_kind::kAccumulate;
    case RooflineOp::kZero: return op_kind::kZero;
    case RooflineOp::kSwigluForward: return op_kind::kSwigluForward;
    case RooflineOp::kSwigluBackward: return op_kind::kSwigluBackward;
    case RooflineOp::kGeluForward: return op_kind::kGeluForward;
    case RooflineOp::kGeluBackward: return op_kind::kGeluBackward;
    case RooflineOp::kEmbeddingForward: return op_kind::kEmbeddingForward;
    case RooflineOp::kEmbeddingBackward: return op_kind::kEmbeddingBackward;
    case RooflineOp::kCrossEntropy: return op_kind::kCrossEntropy;
    case RooflineOp::kNarrow: return op_kind::kNarrow;
    case RooflineOp::kWiden: return op_kind::kWiden;
    case RooflineOp::kBiasAdd: return op_kind::kBiasAdd;
    case RooflineOp::kBiasBackward: return op_kind::kBiasBackward;
    case RooflineOp::kFp8Quantize: return op_kind::kFp8Quantize;
    case RooflineOp::kOptimizerStep: return op_kind::kOptimizerStep;
  }
  return "";
}

// What the roofline says of one kind over a step: FLOPs, bytes as built, seconds at the device's rates.
struct KindOnPaper {
  double flops = 0.0, bytes = 0.0, seconds = 0.0;
};

std::map<std::string, KindOnPaper> on_paper(const StepProfileContext& context) {
  std::map<std::string, KindOnPaper> kinds;
  for (const RooflineRow& row : context.step.rows) {
    if (row.shapes.empty()) continue;
    KindOnPaper& k = kinds[kind_of(row.shapes.front().op)];
    k.flops += row.flops;
    k.bytes += row.bytes_built;
    if (context.roofline != nullptr) k.seconds += roofline_seconds(row, *context.roofline, false);
  }
  return kinds;
}

// One row of the ops table: a kind over all phases, per steady step.
struct KindRow {
  std::string kind;
  double calls = 0.0, seconds = 0.0, flops = 0.0;
};

std::vector<KindRow> rows_by_kind(const StepProfileTotals& t) {
  std::vector<KindRow> rows;
  for (const OpKindTotals& o : t.ops) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const KindRow& r) { return r.kind == o.kind; });
    if (it == rows.end()) it = rows.insert(rows.end(), KindRow{.kind = o.kind});
    it->calls += double(o.calls) / double(t.steps);
    it->seconds += o.seconds / double(t.steps);
    it->flops += o.flops / double(t.steps);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KindRow& a, const KindRow& b) { return a.seconds > b.seconds; });
  return rows;
}

const StepProfileTotals& steady_or_first(const RunStepProfile& p) { return p.steady.steps > 0 ? p.steady : p.first_step; }

// The rate a kind reached: TFLOP/s for the tensor-core kinds (GEMMs: their calls' own FLOPs;
// attention: the roofline's), GB/s of the roofline's bytes for the rest, which memory bounds; 0
// where the count is unknown.
struct Rate {
  double tflops = 0.0, gb_per_s = 0.0;
};
Rate rate_of(const KindRow& row, const KindOnPaper* paper) {
  Rate r;
  if (row.seconds <= 0.0) return r;
  const bool compute = row.kind == op_kind::kGemm || row.kind.starts_with("attention");
  const double flops = row.flops > 0.0 ? row.flops : (paper != nullptr ? paper->flops : 0.0);
  if (compute && flops > 0.0) r.tflops = flops / row.seconds / 1e12;
  if (!compute && paper != nullptr && paper->bytes > 0.0) r.gb_per_s = paper->bytes / row.seconds / 1e9;
  return r;
}

}  // namespace

StepProfileContext step_profile_context(const recipe::RunConfig& config, const models::ModelConfig& model,
                                        int world_size, const std::string& device, const std::string& gpu_model) {
  StepProfileContext c;
  c.device = device;
  if (gpu_model.find("H200") != std::string::npos) c.roofline = roofline_device("h200");
  else if (gpu_model.find("H100") != std::string::npos) c.roofline = roofline_device("h100");
  else if (gpu_model.find("4090") != std::string::npos) c.roofline = roofline_device("rtx4090");
  c.step = roofline_step(roofline_inputs(config, model, estimate_memory(config, model, world_size)));
  return c;
}

std::string step_profile_table(const RunStepProfile& profile, const StepProfileContext& context) {
  const StepProfileTotals& t = steady_or_first(profile);
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  if (t.steps == 0) return "step profile: no step was trained\n";
  const double n = double(t.steps);
  const double wall = t.wall_seconds / n;
  add("\nStep profile on %s: %s step%s (%lld)%s\n", context.device.c_str(),
      profile.steady.steps > 0 ? "mean of the steady" : "the first", t.steps == 1 ? "" : "s", (long long)t.steps,
      profile.steady.steps > 0 ? ", the first step left out" : " (no steady step: train more than one step)");
  add("  wall %.3f ms = busy %.3f ms (the ops) + idle %.3f ms (between them)\n", wall * 1e3, t.busy_seconds / n * 1e3,
      t.idle_seconds / n * 1e3);
  if (profile.steady.steps > 0) add("  first step: wall %.3f ms\n", profile.first_step.wall_seconds * 1e3);
  add("  host: %.1f op calls, %.1f copies to the device, %.1f copies back, %.1f synchronizations, %.1f allocations per step\n",
      double(t.counters.op_calls) / n, double(t.counters.copies_to_device) / n, double(t.counters.copies_to_host) / n,
      double(t.counters.synchronizations) / n, double(t.counters.allocations) / n);
  add("\n  %-22s %12s %8s\n", "phase", "ms / step", "of wall");
  for (int p = 0; p < kOpPhaseCount; ++p) {
    if (t.phase_seconds[size_t(p)] <= 0.0) continue;
    add("  %-22s %12.3f %7.1f%%\n", op_phase_name(OpPhase(p)), t.phase_seconds[size_t(p)] / n * 1e3,
        100.0 * t.phase_seconds[size_t(p)] / t.wall_seconds);
  }
  add("  %-22s %12.3f %7.1f%%\n", "idle", t.idle_seconds / n * 1e3, 100.0 * t.idle_seconds / t.wall_seconds);
  const std::map<std::string, KindOnPaper> paper = on_paper(context);
  add("\n  %-20s %9s %10s %11s %9s %9s %13s\n", "op", "calls", "us / call", "ms / step", "TFLOP/s", "GB/s",
      context.roofline != nullptr ? (std::string("roofline ms ") + context.roofline->name).c_str() : "roofline ms");
  for (const KindRow& row : rows_by_kind(t)) {
    const auto it = paper.find(row.kind);
    const KindOnPaper* p = it == paper.end() ? nullptr : &it->second;
    const Rate r = rate_of(row, p);
    char tflops[32] = "-", gbs[32] = "-", roof[32] = "-";
    if (r.tflops > 0.0) std::snprintf(tflops, sizeof tflops, "%.3f", r.tflops);
    if (r.gb_per_s > 0.0) std::snprintf(gbs, sizeof gbs, "%.1f", r.gb_per_s);
    if (p != nullptr && context.roofline != nullptr) std::snprintf(roof, sizeof roof, "%.3f", p->seconds * 1e3);
    add("  %-20s %9.1f %10.2f %11.3f %9s %9s %13s\n", row.kind.c_str(), row.calls,
        row.calls > 0 ? row.seconds / row.calls * 1e6 : 0.0, row.seconds * 1e3, tflops, gbs, roof);
  }
  add("\n  largest idle gaps (step: after -> before, phase):\n");
  for (const IdleGap& g : t.largest_gaps) {
    add("  %10.3f ms  step %lld: %s -> %s (%s)\n", g.seconds * 1e3, (long long)g.step, g.after.c_str(),
        g.before.c_str(), op_phase_name(g.phase));
  }
  if (!profile.gemm_plans.empty()) {  // a GPU's cuBLASLt plans (lines longer than `line` holds)
    out += "\n  GEMM plans (each timed once at planning):\n";
    for (const kernels::GemmPlanRecord& r : profile.gemm_plans) out += "  " + gemm_plan_record_line(r) + "\n";
  }
  return out;
}

nlohmann::json step_profile_json(const RunStepProfile& profile, const StepProfileContext& context) {
  using nlohmann::json;
  const StepProfileTotals& t = steady_or_first(profile);
  const double n = std::max<double>(1.0, double(t.steps));
  json j;
  j["device"] = context.device;
  j["roofline_device"] = context.roofline != nullptr ? json(context.roofline->name) : json(nullptr);
  j["steady_steps"] = profile.steady.steps;
  j["first_step_wall_s"] = profile.first_step.wall_seconds;
  j["per_step"] = {{"wall_s", t.wall_seconds / n}, {"busy_s", t.busy_seconds / n}, {"idle_s", t.idle_seconds / n}};
  json phases = json::object();
  for (int p = 0; p < kOpPhaseCount; ++p) phases[op_phase_name(OpPhase(p))] = t.phase_seconds[size_t(p)] / n;
  j["per_step"]["phases_s"] = phases;
  j["per_step"]["host"] = {{"op_calls", double(t.counters.op_calls) / n},
                           {"copies_to_device", double(t.counters.copies_to_device) / n},
                           {"copies_to_host", double(t.counters.copies_to_host) / n},
                           {"synchronizations", double(t.counters.synchronizations) / n},
                           {"allocations", double(t.counters.allocations) / n}};
  const std::map<std::string, KindOnPaper> paper = on_paper(context);
  json ops = json::array();
  for (const KindRow& row : rows_by_kind(t)) {
    const auto it = paper.find(row.kind);
    const KindOnPaper* p = it == paper.end() ? nullptr : &it->second;
    const Rate r = rate_of(row, p);
    json phases_of_kind = json::object();
    for (const OpKindTotals& o : t.ops) {
      if (o.kind == row.kind) phases_of_kind[op_phase_name(o.phase)] = {{"calls", double(o.calls) / n}, {"s", o.seconds / n}};
    }
    ops.push_back({{"kind", row.kind}, {"calls", row.calls}, {"s", row.seconds},
                   {"us_per_call", row.calls > 0 ? row.seconds / row.calls * 1e6 : 0.0},
                   {"tflops", r.tflops}, {"gb_per_s", r.gb_per_s},
                   {"roofline_s", p != nullptr && context.roofline != nullptr ? json(p->seconds) : json(nullptr)},
                   {"phases", phases_of_kind}});
  }
  j["ops"] = ops;
  json gaps = json::array();
  for (const IdleGap& g : t.largest_gaps) {
    gaps.push_back({{"s", g.seconds}, {"step", g.step}, {"after", g.after}, {"before", g.before},
                    {"phase", op_phase_name(g.phase)}});
  }
  j["largest_gaps"] = gaps;
  json plans = json::array();
  for (const kernels::GemmPlanRecord& r : profile.gemm_plans) {
    plans.push_back({{"key", r.key}, {"algorithm", r.algorithm}, {"tflops", r.tflops},
                     {"candidate_tflops", r.candidate_tflops}, {"how", r.how}});
  }
  j["gemm_plans"] = plans;  // empty off a GPU
  return j;
}

std::filesystem::path report_step_profile(const Trainer& trainer, int rank) {
  const RunStepProfile* profile = trainer.step_profile();
  if (profile == nullptr || rank != 0) return {};
  const Device device = trainer.device();
  const std::string model = backend_for(device).device_model();
  const StepProfileContext context =
      step_profile_context(trainer.config(), trainer.model().config(), trainer.world_size(),
                           device.name() + (model.empty() ? "" : " (" + model + ")"), model);
  std::printf("%s", step_profile_table(*profile, context).c_str());
  const std::filesystem::path path = std::filesystem::path(trainer.config().checkpoint.run_dir) / "profile.json";
  std::ofstream out(path);
  out << step_profile_json(*profile, context).dump(1) << "\n";
  FARTHING_CHECK(out.good(), "could not write the step profile to ", path.string());
  std::printf("step profile written to %s\n", path.string().c_str());
  return path;
}

}  // namespace farthing::train

// verb_plan.cpp — `farthing plan RECIPE [--set k=v]... [--world-size N] [--preset NAME] [--budget-gb X]
// [--interconnect NAME|FILE (--profile FILE | --compute-tflops R [--memory-gbs M])] [--roofline DEVICE] [--json]`:
// what a run will hold per rank, before anything is allocated — bytes per parameter by
// category (docs/design.md, "Memory per parameter") and the predicted peak — and a refusal when it exceeds a budget;
// with --interconnect, how long its step takes at each ZeRO stage on that many ranks
// (train/plan/scaling_model.h).
// The parameter store's choices are explained in the table's notes: what is held whole or
// sharded, what a unit in use costs, what happens to gradients, and when the step peaks.
// The model's architecture comes from its preset, or from the config of model.path (only
// config.json for a safetensors model, the stored model_config of a training checkpoint; GGUF
// and llama2.c files are read whole, which costs their size in fp32 for a moment).
// Relies on: train/recipe/recipe.h, train/plan/{memory_estimate,scaling_model,scaling_profile}.h,
// framework/ckpt.
// Tested by: tests/train/plan/test_memory_estimate.cpp (the arithmetic and the budget check).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/read_model.h"
#include "framework/core/error.h"
#include "train/recipe/recipe.h"
#include "train/plan/memory_estimate.h"
#include "train/loop/model_options.h"
#include "train/plan/scaling_model.h"
#include "train/plan/scaling_profile.h"
#include "models/common/presets.h"
#include "models/common/weights_from_file.h"
#include "train/loop/train_device.h"
#include "train/plan/device_fit.h"
#include "train/plan/roofline_table.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
namespace train = farthing::train;
namespace recipe = farthing::recipe;
namespace optim = farthing::optim;
namespace models = farthing::models;
using farthing::MemoryCategory;

struct PlanArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  int world_size = 1;
  std::string preset;  // architecture override: plan without model.path's files
  double budget_gb = -1.0;
  std::string interconnect;  // step time: the links
  int ranks_per_node = 1;    // step time: ranks behind one node's link (link:RATE:LATENCY)
  std::string profile;       // step time: measured compute
  double compute_tflops = 0.0, memory_gbs = 3350.0;
  std::string roofline;  // a device name: the step on paper (roofline_table.h)
  bool measure_ops = false;  // and each op's time here (roofline_measure.h)
  std::string fit;           // a device name: the settings that fit it (device_fit.h)
  bool json = false;
};

// The options that parse one by one but do not go together.
void check_plan_args(const PlanArgs& p) {
  auto usage = [](bool ok, const std::string& message) {
    if (!ok) throw farthing::cli::UsageError(message);
  };
  usage(p.roofline.empty() || !p.json, "--roofline prints a table; it has no --json form");
  usage(p.fit.empty() || !p.json, "--fit prints a table; it has no --json form");
  usage(!p.measure_ops || !p.roofline.empty(), "--measure-ops needs --roofline DEVICE");
  const bool step_time = !p.profile.empty() || p.compute_tflops > 0.0;
  usage(p.interconnect.empty() || step_time,
        "--interconnect needs the compute: --profile FILE (farthing bench dist --out) or --compute-tflops R");
  usage(!step_time || !p.interconnect.empty(), std::string("--profile and --compute-tflops need --interconnect (") +
                                                   train::kInterconnectNames + ", or a file of measured links)");
  usage(p.profile.empty() || p.compute_tflops <= 0.0, "give --profile or --compute-tflops, not both");
  usage(p.ranks_per_node == 1 || p.interconnect.substr(0, 5) == "link:",
        "--ranks-per-node goes with --interconnect link:RATE:LATENCY (the presets and measured links are per rank)");
  usage(p.world_size % p.ranks_per_node == 0, "--world-size " + std::to_string(p.world_size) +
        " is not a whole number of nodes of --ranks-per-node " + std::to_string(p.ranks_per_node));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  FARTHING_CHECK(in.good(), "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The architecture of the recipe's model, and where it came from (said in the output).
struct PlannedModel {
  farthing::models::ModelConfig config;
  std::string source;
};

PlannedModel planned_model(const farthing::recipe::ModelSection& model, const std::string& preset_override) {
  if (!preset_override.empty()) {
    return {farthing::models::preset_config(preset_override), "preset " + preset_override + " (--preset)"};
  }
  if (model.path.empty()) return {farthing::models::preset_config(model.preset), "preset " + model.preset};
  const fs::path path = model.path;
  FARTHING_CHECK(fs::exists(path), "model.path '", model.path,
                 "' does not exist; point it at an HF model directory, a .safetensors, .gguf or llama2.c .bin "
                 "file, or plan with a preset's architecture: farthing plan RECIPE --preset NAME");
  // A safetensors model's architecture is its config.json: no tensor needs reading.
  const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  const bool safetensors = fs::is_directory(path) || path.extension() == ".safetensors" ||
                           path.filename().string().ends_with(".index.json");
  if (safetensors && fs::exists(dir / "config.json")) {
    return {farthing::models::config_from_hf_json(read_text(dir / "config.json"), path.filename().string()),
            (dir / "config.json").string()};
  }
  // A farthing training checkpoint stores its model's config.json as a string.
  if (path.extension() == ".h5") {
    const farthing::H5CheckpointReader reader(path);
    return {farthing::models::config_from_hf_json(reader.read_string("model_config"), path.filename().string()),
            model.path + " (its model_config)"};
  }
  // GGUF metadata and llama2.c headers become a config inside their readers, which read the tensors too.
  const farthing::ckpt::ModelFile file = farthing::ckpt::read_model_file(path);
  return {farthing::models::model_config_from_file(file), model.path + " (read whole for its config)"};
}

std::string category_label(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::kWeights: return "weights";
    case MemoryCategory::kGrads: return "grads";
    case MemoryCategory::kMaster: return "master";
    case MemoryCategory::kOptimizerState: return "optimizer state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommBuffers: return "comm buffers";
    case MemoryCategory::kOther: return "other";
  }
  return "";
}

// What each category holds in this run, in words.
std::string category_detail(MemoryCategory c, const train::MemoryEstimate& e, const farthing::recipe::RunConfig& r) {
  switch (c) {
    case MemoryCategory::kWeights:
      return (e.zero_stage == 3 ? "bf16, this rank's owned shards" : "bf16, whole (the only copy of the weights)") +
             (e.master_copy > 0 ? " + the master gathered whole for fp32 compute " + train::format_bytes(e.master_copy)
                                : std::string());
    case MemoryCategory::kGrads:
      if (e.optimizer_in_backward) return "none kept: each unit steps as soon as backward has reduced it";
      return std::string(e.grad_bytes_per_elem == 2 ? "bf16 (one backward's gradient)"
                         : e.grad_sums             ? "fp32 sums"
                                                   : "fp32 (one backward's gradient, train.grad_dtype)") +
             (e.zero_stage == 1 ? ", whole" : ", owned shards only");
    case MemoryCategory::kMaster:
      if (e.optimizer.on_host && r.optimizer.master != optim::MasterMode::kNone) {
        return "none on the device: " + std::string(recipe::enum_name(r.optimizer.master)) + " in host memory, " +
               train::format_bytes(e.optimizer.master) + " (optimizer.offload host)";
      }
      return r.optimizer.master == optim::MasterMode::kNone
                 ? "none (bf16 weights are the only copy)"
                 : std::string(recipe::enum_name(r.optimizer.master)) + " of this rank's ZeRO shards";
    case MemoryCategory::kOptimizerState: {
      const std::string state(recipe::enum_name(r.optimizer.state));
      if (e.optimizer.on_host) {
        return "only the step's sums on the device: m, v (" + state + ") in host memory, " +
               train::format_bytes(e.optimizer.state()) + " (optimizer.offload host)";
      }
      if (!optim::is_quantized(r.optimizer.state)) return "m, v: " + state;
      // Small tensors, embeddings (embedding_f32_state) and off-block ranges keep f32 moments.
      const double quantized = double(e.quantized_state_elems) / double(std::max<int64_t>(1, e.optimizer.owned_elems));
      char text[160];
      std::snprintf(text, sizeof text, "m, v: %s on %.0f%% of elements, f32 elsewhere (absmax %s)",
                    state.c_str(), 100.0 * quantized, train::format_bytes(e.optimizer.absmax).c_str());
      return text;
    }
    case MemoryCategory::kActivations:
      return "batch " + std::to_string(r.train.micro_batch) + " x seq " + std::to_string(r.data.seq_len) +
             (r.model.activation_checkpointing == models::Checkpointing::kPerBlock ? ", per-block checkpointing" : ", every block stored") +
             ", logits " + std::to_string(r.model.loss_chunk_rows) + " rows" +
             (e.ops_workspace > 0 ? ", CUDA ops' workspace " + train::format_bytes(e.ops_workspace) +
                                        " (cuDNN attention's bf16 copies, or a biased GEMM's fp32 staging; + cuDNN's "
                                        "own, sized at run time)"
                                  : std::string());
    case MemoryCategory::kCommBuffers:
      if (e.world_size == 1) return "none at world size 1";
      return (e.comm_staging > 0 ? "ZeRO staging " + train::format_bytes(e.comm_staging) + " + " : std::string()) +
             "one unit's gather or gradient reduction at a time (the largest) " + train::format_bytes(e.comm_transient);
    case MemoryCategory::kOther:
      return e.from_file ? "one unit of model.path decoded to fp32 at a time, only while the trainer is built"
                         : "one unit's fp32 first weights, only while the trainer is built";
  }
  return "";
}

double nominal_of(MemoryCategory c, const train::MemoryEstimate& e) {
  switch (c) {
    case MemoryCategory::kWeights: return e.nominal.weights;
    case MemoryCategory::kGrads: return e.nominal.grads;
    case MemoryCategory::kMaster: return e.nominal.master;
    case MemoryCategory::kOptimizerState: return e.nominal.moments;
    default: return -1.0;
  }
}

// "260032" or "8.03 B": exact for small models, readable for large ones.
std::string human_count(int64_t n) {
  char text[32];
  if (n >= 1'000'000'000) std::snprintf(text, sizeof text, "%.2f B", double(n) / 1e9);
  else if (n >= 1'000'000) std::snprintf(text, sizeof text, "%.1f M", double(n) / 1e6);
  else std::snprintf(text, sizeof text, "%lld", (long long)n);
  return text;
}

constexpr MemoryCategory kModelState[] = {MemoryCategory::kWeights, MemoryCategory::kGrads, MemoryCategory::kMaster,
                                          MemoryCategory::kOptimizerState};
constexpr MemoryCategory kWorkspace[] = {MemoryCategory::kActivations, MemoryCategory::kCommBuffers};

// optimizer.offload host: what the optimizer holds in host memory, beside the device's figures above.
void print_host_memory(const farthing::recipe::RunConfig& r, const train::MemoryEstimate& e) {
  const double params = double(e.param_count);
  const bool same_memory = r.train.device == recipe::TrainDevice::kCpu;
  std::printf("\nhost memory (optimizer.offload host: the master and moments, and their nominal cost)%s\n",
              same_memory ? ": train.device is cpu, so this is the same memory as the figures above" : "");
  std::printf("%-16s %8.2f %8.2f %12s  %s\n", "master", double(e.optimizer.master) / params, e.nominal_host.master,
              train::format_bytes(e.optimizer.master).c_str(),
              r.optimizer.master == optim::MasterMode::kNone
                  ? "none (bf16 weights are the only copy)"
                  : (std::string(recipe::enum_name(r.optimizer.master)) + " of this rank's ZeRO shards").c_str());
  std::printf("%-16s %8.2f %8.2f %12s  %s\n", "optimizer state", double(e.optimizer.state()) / params,
              e.nominal_host.moments, train::format_bytes(e.optimizer.state()).c_str(),
              ("m, v: " + std::string(recipe::enum_name(r.optimizer.state)) + ", stepped by the CPU kernels").c_str());
  std::printf("%-16s %8s %8s %12s  %s\n", "transfer ring", "-", "", train::format_bytes(e.optimizer.host_ring).c_str(),
              (std::to_string(r.optimizer.offload_ring_units) +
               (r.optimizer.offload_ring_units == 1 ? " slot" : " slots") + ", each the largest shard's " +
               std::string(dtype_name(e.offload.grad_dtype)) + " gradients (as the store hands them over) and bf16 "
               "weights (pinned on CUDA)").c_str());
  std::printf("%-16s %8s %8s %12s  %s\n", "host total", "", "", train::format_bytes(e.host_bytes()).c_str(),
              "held for the run, this rank (the process's own RSS, the dataset and the page cache come on top)");
  std::printf("%-16s %8s %8s %12s  %s\n", "  while building", "", "", train::format_bytes(e.host_load_peak_bytes).c_str(),
              ("the above, and one unit's fp32 first values or init_master's copy of one shard (" +
               train::format_bytes(e.optimizer.host_init_staging) + "), the larger (both on train.device cpu)")
                  .c_str());
}

void print_table(const PlanArgs& a, const farthing::recipe::RunConfig& r, const PlannedModel& pm,
                 const train::MemoryEstimate& e) {
  const farthing::models::ModelConfig& c = e.model;
  std::printf("plan      %s, world size %d, ZeRO stage %d%s\n", a.recipe.c_str(), e.world_size, e.zero_stage,
              e.optimizer_in_backward ? ", optimizer step fused into backward" : "");
  std::printf("model     %s (%s): %s params, dim %lld, hidden %lld, %lld layers, %lld heads (%lld kv), vocab %lld\n",
              c.name.c_str(), c.family == farthing::models::ModelFamily::kLlama ? "llama" : "gpt2",
              human_count(e.param_count).c_str(), (long long)c.dim, (long long)c.hidden_dim, (long long)c.n_layers,
              (long long)c.n_heads, (long long)c.n_kv_heads, (long long)c.vocab_size);
  std::printf("          from %s\n", pm.source.c_str());
  std::printf("train     micro_batch %lld x seq_len %lld, grad_accum %lld, precision %s; adamw state %s%s, master %s\n",
              (long long)r.train.micro_batch, (long long)r.data.seq_len, (long long)r.train.grad_accum,
              std::string(recipe::enum_name(r.train.precision)).c_str(),
              std::string(recipe::enum_name(r.optimizer.state)).c_str(),
              r.optimizer.embedding_f32_state && r.optimizer.state != optim::StateFormat::kF32 ? " (embeddings/head f32)"
                                                                                              : "",
              std::string(recipe::enum_name(r.optimizer.master)).c_str());
  if (e.world_size > 1) std::printf("          rank %d holds the most (ranks own unequal shards)\n", e.peak_rank);
  std::printf("\n%-16s %8s %8s %12s  %s\n", "category", "B/param", "nominal", "per rank", "what");
  double model_state_nominal = 0.0;
  const double params = double(e.param_count);
  for (MemoryCategory cat : kModelState) {
    model_state_nominal += nominal_of(cat, e);
    std::printf("%-16s %8.2f %8.2f %12s  %s\n", category_label(cat).c_str(), double(e.held_bytes(cat)) / params,
                nominal_of(cat, e), train::format_bytes(e.held_bytes(cat)).c_str(), category_detail(cat, e, r).c_str());
  }
  std::printf("%-16s %8.2f %8.2f %12s  %s\n", "model state", double(e.model_state_bytes()) / params,
              model_state_nominal, train::format_bytes(e.model_state_bytes()).c_str(), "held for the run, this rank");
  const bool reads_bf16 = train::compute_mode_of(r.train.precision) == models::ComputeMode::kBF16;
  const bool fp4 = train::fp4_recipe_of(r) != nullptr;
  const std::string in_use = r.train.precision == recipe::Precision::kFp8
                                 ? "bf16 weights read in place, FP8 codes of the projections, 1-D tensors widened "
                             : fp4 ? "bf16 weights read in place (FP4 operands cast at each GEMM), 1-D tensors widened "
                             : reads_bf16 ? "bf16 weights read in place, 1-D tensors widened "
                             : r.train.precision == recipe::Precision::kFp16 ? "fp32 parameters and fp16 GEMM copies "
                                                                             : "fp32 parameters ";
  std::printf("%-16s %8s %8s %12s  %s\n", "units in use", "-", "-",
              train::format_bytes(e.unit_weights + e.unit_grads).c_str(),
              (in_use + train::format_bytes(e.unit_weights) + ", fp32 gradient accumulators and scratch " +
               train::format_bytes(e.unit_grads))
                  .c_str());
  for (MemoryCategory cat : kWorkspace) {
    std::printf("%-16s %8s %8s %12s  %s\n", category_label(cat).c_str(), "-", "-",
                train::format_bytes(e.bytes(cat)).c_str(), category_detail(cat, e, r).c_str());
  }
  if (e.initial_weights > 0) {
    std::printf("%-16s %8s %8s %12s  %s\n", category_label(MemoryCategory::kOther).c_str(), "-", "-",
                train::format_bytes(e.initial_weights).c_str(), category_detail(MemoryCategory::kOther, e, r).c_str());
  }
  const bool at_load = e.load_peak_bytes > e.step_peak_bytes;
  std::printf("%-16s %8s %8s %12s  %s\n", "peak per rank", "", "", train::format_bytes(e.peak_bytes).c_str(),
              at_load ? e.load_peak_moment.c_str() : "during a training step");
  int64_t category_sum = 0;
  for (int64_t b : e.step_bytes) category_sum += b;
  const std::string step_moment =
      category_sum == e.step_peak_bytes
          ? "at " + e.step_peak_moment + " (all of the above at once)"
          : "at " + e.step_peak_moment + " (categories peak at different moments; their sum is " +
                train::format_bytes(category_sum) + ")";
  std::printf("%-16s %8s %8s %12s  %s\n", "  training step", "", "", train::format_bytes(e.step_peak_bytes).c_str(),
              step_moment.c_str());
  std::printf("%-16s %8s %8s %12s  %s\n", "  while building", "", "", train::format_bytes(e.load_peak_bytes).c_str(),
              e.from_file ? "model state, and one unit of the mapped model.path in fp32 (activations come after)"
                          : "model state, and one unit's fp32 first weights (activations come after)");
  if (e.optimizer.on_host) print_host_memory(r, e);
  // What the store keeps, so that the gap to section 6's figures is not a surprise.
  const bool gather_master = r.train.precision == recipe::Precision::kFp32 && r.optimizer.master == optim::MasterMode::kF32;
  std::printf("\nparameter store (ZeRO stage %d%s): the bf16 weights are the only copy of the weights.\n", e.zero_stage,
              e.optimizer_in_backward ? ", optimizer step fused into backward" : "");
  std::printf("  weights   %s\n", e.zero_stage == 3 ? "bf16, this rank's owned shards only"
                                                    : "bf16, whole on every rank (all-gathered after each step)");
  if (reads_bf16) {
    std::printf("  in use    the GEMMs read each unit's bf16 weights %s; only its 1-D tensors are widened%s\n",
                e.zero_stage == 3 && e.world_size > 1 ? "as all-gathered" : "in place",
                r.train.precision == recipe::Precision::kFp8 ? "; its projections' FP8 codes are made on acquire" : "");
  } else {
    std::printf("  in use    each unit's fp32 parameters while it runs, %s from the %s%s\n",
                e.zero_stage == 3 && e.world_size > 1 ? "all-gathered" : "widened exactly",
                gather_master ? "fp32 master" : "bf16 weights",
                r.train.precision == recipe::Precision::kFp16 ? ", plus an fp16 GEMM copy" : "");
  }
  std::printf("  alive     the embedding for the whole step, one block at a time in forward and again\n"
              "            in backward, the head from the final norm to its backward\n");
  std::printf("  gradients a unit's fp32 accumulator lives until backward finishes the unit, then is %s\n"
              "            and %s\n",
              e.world_size == 1         ? "(world size 1) taken as it is"
              : e.zero_stage == 1       ? "all-reduced"
                                        : "reduce-scattered to the owners",
              e.optimizer_in_backward    ? "stepped at once (no gradients are kept)"
              : e.grad_bytes_per_elem == 2 ? "kept in bf16 (one backward's gradient, read once by the optimizer)"
              : e.grad_sums                ? "added to the kept fp32 sums (grad_accum or several ranks)"
                                           : "kept in fp32 (one backward's gradient, train.grad_dtype)");
  if (e.grad_in_place_elems > 0) {
    std::printf("            in place: blocks, a head whose loss runs in one chunk and its embedding write\n"
                "            their gradients into the kept fp32 sums (the step's first micro-batch) or add\n"
                "            them whole, with no accumulator; only their 1-D tensors' sums and the\n"
                "            embedding's rows (per distinct token, or set aside when tied) are held\n"
                "            (docs/parameter_store.md)\n");
    if (e.world_size > 1) std::printf("            over ranks the all-reduce then sums the kept copies in place\n");
  } else {
    std::printf("            written: a unit whose gradients are formed whole once (blocks, a head whose loss\n"
                "            runs in one chunk and its embedding) writes its accumulator, which is not zeroed\n"
                "            (docs/parameter_store.md)\n");
  }
  std::printf("\nnominal: the per-parameter cost of these settings (docs/design.md, \"Memory per parameter\"); the\n"
              "units in use and the workspace come on top (flat space %lld elements for %lld parameters).\n",
              (long long)e.flat_elems, (long long)e.param_count);
}

nlohmann::json to_json(const PlanArgs& a, const farthing::recipe::RunConfig& r, const PlannedModel& pm,
                       const train::MemoryEstimate& e) {
  nlohmann::json categories = nlohmann::json::object();
  for (MemoryCategory cat : kModelState) {
    categories[category_label(cat)] = {{"bytes", e.bytes(cat)},  // the category's peak, units in use included
                                       {"held_bytes", e.held_bytes(cat)},
                                       {"held_bytes_per_param", double(e.held_bytes(cat)) / double(e.param_count)},
                                       {"nominal_bytes_per_param", nominal_of(cat, e)}};
  }
  if (e.optimizer.on_host) {  // the nominal cost of what lives in host memory instead
    categories[category_label(MemoryCategory::kMaster)]["nominal_host_bytes_per_param"] = e.nominal_host.master;
    categories[category_label(MemoryCategory::kOptimizerState)]["nominal_host_bytes_per_param"] = e.nominal_host.moments;
  }
  for (MemoryCategory cat : kWorkspace) categories[category_label(cat)] = {{"bytes", e.bytes(cat)}};
  if (e.initial_weights > 0) categories[category_label(MemoryCategory::kOther)] = {{"bytes", e.initial_weights}};
  const farthing::models::ModelConfig& c = e.model;
  return {{"recipe", a.recipe},
          {"world_size", e.world_size},
          {"zero_stage", e.zero_stage},
          {"optimizer_in_backward", e.optimizer_in_backward},
          {"peak_rank", e.peak_rank},
          {"model",
           {{"name", c.name},
            {"family", c.family == farthing::models::ModelFamily::kLlama ? "llama" : "gpt2"},
            {"source", pm.source},
            {"params", e.param_count},
            {"flat_elems", e.flat_elems},
            {"dim", c.dim},
            {"hidden_dim", c.hidden_dim},
            {"n_layers", c.n_layers},
            {"n_heads", c.n_heads},
            {"n_kv_heads", c.n_kv_heads},
            {"vocab_size", c.vocab_size}}},
          {"train",
           {{"micro_batch", r.train.micro_batch},
            {"seq_len", r.data.seq_len},
            {"grad_accum", r.train.grad_accum},
            {"precision", std::string(recipe::enum_name(r.train.precision))},
            {"activation_checkpointing", std::string(recipe::enum_name(r.model.activation_checkpointing))},
            {"optimizer_state", std::string(recipe::enum_name(r.optimizer.state))},
            {"master", std::string(recipe::enum_name(r.optimizer.master))}}},
          {"categories", categories},
          {"model_state_bytes", e.model_state_bytes()},
          {"model_state_bytes_per_param", double(e.model_state_bytes()) / double(e.param_count)},
          {"ops_workspace_bytes", e.ops_workspace},
          {"comm_staging_bytes", e.comm_staging},
          {"comm_transient_bytes", e.comm_transient},
          {"trainer_weights_bytes", e.trainer_weights},
          {"grad_sum_bytes", e.grad_sum},
          {"unit_weights_bytes", e.unit_weights},
          {"unit_grads_bytes", e.unit_grads},
          {"step_peak_bytes", e.step_peak_bytes},
          {"step_peak_moment", e.step_peak_moment},
          {"load_peak_bytes", e.load_peak_bytes},
          {"load_peak_moment", e.load_peak_moment},
          {"peak_bytes_per_rank", e.peak_bytes},
          {"offload", std::string(recipe::enum_name(r.optimizer.offload))},
          {"host_bytes_per_rank",
           {{"master", e.optimizer.on_host ? e.optimizer.master : 0},
            {"optimizer_state", e.optimizer.on_host ? e.optimizer.state() : 0},
            {"transfer_ring", e.optimizer.host_ring},
            {"total", e.host_bytes()},
            {"init_staging", e.optimizer.host_init_staging},
            {"load_peak", e.host_load_peak_bytes}}}};
}

// Step time at ZeRO stages 1-3 on the plan's world size (scaling_model.h), both schedules.
struct StageTime {
  int stage = 1;
  train::StepPrediction serial, overlapped;
};
struct StepTimePlan {
  train::Interconnect links;
  std::string compute_source;
  int64_t tokens_per_rank = 0;  // per step
  std::vector<StageTime> stages;
};

StepTimePlan plan_step_time(const PlanArgs& a, const farthing::recipe::RunConfig& r, const models::ModelConfig& model) {
  const int N = a.world_size;
  const models::TransformerSpec spec = models::make_spec(model);
  const models::UnitSchedule schedule = models::Transformer::unit_schedule(spec);
  const std::vector<farthing::dist::UnitRange> units = models::zero_units(spec.layout);
  int busiest = 0;  // the rank owning the most steps the longest
  int64_t most = -1;
  for (int rank = 0; rank < N; ++rank) {
    const int64_t owned = farthing::dist::ZeroLayout(units, N, rank).owned_elems();
    if (owned > most) most = owned, busiest = rank;
  }
  const farthing::dist::ZeroLayout zero(units, N, busiest);
  StepTimePlan plan;
  if (fs::exists(a.interconnect)) {
    const train::ScalingProfile measured = train::read_scaling_profile(a.interconnect);
    FARTHING_CHECK(measured.world_size > 1, "farthing plan --interconnect ", a.interconnect, " was measured at world size 1: "
                   "it holds no links; measure them under mpirun -np 2 or more");
    plan.links = measured.links;
  } else {
    plan.links = train::interconnect_preset(a.interconnect, a.ranks_per_node);
  }
  std::optional<train::ScalingProfile> profile;
  if (!a.profile.empty()) {
    profile = train::read_scaling_profile(a.profile);
    FARTHING_CHECK(profile->seq == r.data.seq_len && profile->batch == r.train.micro_batch, "farthing plan --profile ",
                   a.profile, " measured micro_batch ", profile->batch, " x seq_len ", profile->seq, ", but the recipe has ",
                   r.train.micro_batch, " x ", r.data.seq_len, "; measure at the recipe's shape (farthing bench dist "
                   "--preset P --batch B --seq T --out FILE) or --set them");
    const int64_t params = spec.layout.param_count();
    FARTHING_CHECK(profile->param_count == params, "farthing plan --profile ", a.profile, " measured ", profile->preset,
                   " (", profile->param_count, " parameters), but the recipe's model ", model.name, " has ", params,
                   ": measure the recipe's model (farthing bench dist --preset P --out FILE)");
    char text[256];
    std::snprintf(text, sizeof text, "measured by farthing bench dist on %s at np %d, %d threads per rank (%s)",
                  profile->preset.c_str(), profile->world_size, profile->threads, a.profile.c_str());
    plan.compute_source = text;
  } else {
    char text[160];
    std::snprintf(text, sizeof text, "the model's FLOPs at %.0f TFLOP/s per rank, the optimizer at %.0f GB/s",
                  a.compute_tflops, a.memory_gbs);
    plan.compute_source = text;
  }
  const int64_t A = r.train.grad_accum;
  plan.tokens_per_rank = A * r.train.micro_batch * r.data.seq_len;
  const bool checkpointing = r.model.activation_checkpointing == models::Checkpointing::kPerBlock;
  const train::ZeroSetup base{.gather_f32 = r.train.precision == recipe::Precision::kFp32 &&
                                            r.optimizer.master == optim::MasterMode::kF32,
                              .optimizer_in_backward = r.train.optimizer_in_backward};
  for (int stage = 1; stage <= 3; ++stage) {
    train::StepCompute compute;
    if (profile) {
      compute = profile->compute_at(stage);
      FARTHING_CHECK(compute.turn_seconds.size() == schedule.turns.size(), "farthing plan --profile ", a.profile,
                     " has ", compute.turn_seconds.size(), " turns per pass, but ", model.name, "'s schedule has ",
                     schedule.turns.size(), ": measure the recipe's model (", profile->preset, " was measured)");
      compute.passes = A;
    } else {
      // Bytes the optimizer reads and writes per owned element: master and moments both ways, the
      // bf16 weight both ways, the gradient read once.
      farthing::recipe::RunConfig at_stage = r;
      at_stage.distributed.zero_stage = stage;
      const train::MemoryEstimate e = train::estimate_memory(at_stage, model, N, busiest);
      const double owned = double(std::max<int64_t>(1, e.optimizer.owned_elems));
      const double bytes = 2.0 * double(e.optimizer.master + e.optimizer.state()) / owned + 4.0 +
                           double(e.grad_bytes_per_elem > 0 ? e.grad_bytes_per_elem : 4);
      compute = train::flops_step_compute(spec, schedule, r.train.micro_batch, r.data.seq_len, A, checkpointing,
                                          a.compute_tflops * 1e12, zero.owned_elems(), bytes, a.memory_gbs * 1e9);
    }
    train::ZeroSetup setup = base;
    setup.zero_stage = stage;
    plan.stages.push_back({stage, train::predict_step(schedule, zero, setup, compute, plan.links, train::Overlap::kNone),
                           train::predict_step(schedule, zero, setup, compute, plan.links, train::Overlap::kStreams)});
  }
  return plan;
}

void print_step_time(const PlanArgs& a, const farthing::recipe::RunConfig& r, const StepTimePlan& p) {
  const std::string per_node =
      a.ranks_per_node > 1 ? ", " + std::to_string(a.ranks_per_node) + " ranks per node sharing its link" : "";
  std::printf("\nstep time at world size %d over %s%s (docs/scaling.md)\n", a.world_size, p.links.name.c_str(),
              per_node.c_str());
  std::printf("  links     %s\n", p.links.source.c_str());
  std::printf("  compute   %s\n", p.compute_source.c_str());
  std::printf("  %lld tokens per rank per step; serial: every collective blocks (distributed.reduce_bucket_mib 0, the\n"
              "  default); overlapped: one communication stream, gathers prefetched a unit ahead, reductions as backward\n"
              "  finishes (a reduce_bucket_mib that holds a pass's reductions)\n\n",
              (long long)p.tokens_per_rank);
  std::printf("%-6s %9s %9s %9s %9s %10s | %9s %9s %10s | %9s %9s %10s\n", "stage", "compute s", "optim s", "other s",
              "comm s", "sent/rank", "exposed s", "step s", "tok/s/rank", "exposed s", "step s", "tok/s/rank");
  for (const StageTime& s : p.stages) {
    std::printf("%-6s %9.3f %9.3f %9.3f %9.3f %10s | %9.3f %9.3f %10.0f | %9.3f %9.3f %10.0f\n",
                (std::to_string(s.stage) + (s.stage == r.distributed.zero_stage ? "*" : "")).c_str(),
                s.serial.compute_seconds, s.serial.optimizer_seconds, s.serial.other_seconds, s.serial.comm_seconds,
                train::format_bytes(int64_t(s.serial.bytes_sent)).c_str(), s.serial.exposed_seconds,
                s.serial.step_seconds, double(p.tokens_per_rank) / s.serial.step_seconds, s.overlapped.exposed_seconds,
                s.overlapped.step_seconds, double(p.tokens_per_rank) / s.overlapped.step_seconds);
  }
  std::printf("\n* the recipe's stage. sent/rank: bytes each rank sends per step (ring volumes).\n");
}

nlohmann::json step_time_json(const StepTimePlan& p) {
  nlohmann::json stages = nlohmann::json::array();
  auto one = [&](const train::StepPrediction& x) {
    return nlohmann::json{{"exposed_seconds", x.exposed_seconds}, {"step_seconds", x.step_seconds},
                          {"tokens_per_s_per_rank", double(p.tokens_per_rank) / x.step_seconds}};
  };
  for (const StageTime& s : p.stages) {
    stages.push_back({{"stage", s.stage},
                      {"compute_seconds", s.serial.compute_seconds},
                      {"optimizer_seconds", s.serial.optimizer_seconds},
                      {"other_seconds", s.serial.other_seconds},
                      {"comm_seconds", s.serial.comm_seconds},
                      {"bytes_sent_per_rank", s.serial.bytes_sent},
                      {"serial", one(s.serial)},
                      {"overlapped", one(s.overlapped)}});
  }
  return {{"interconnect", p.links.name},        {"ranks_per_node", p.links.all_gather.ranks_per_node},
          {"links_source", p.links.source},        {"compute_source", p.compute_source},
          {"tokens_per_rank", p.tokens_per_rank}, {"stages", stages}};
}

int run_plan(const PlanArgs& a) {
  check_plan_args(a);
  farthing::recipe::RunConfig config = farthing::recipe::load_recipe(a.recipe, a.overrides);
  const PlannedModel model = planned_model(config.model, a.preset);
  const train::FitDevice* fit = a.fit.empty() ? nullptr : train::fit_device(a.fit);
  if (config.model.loss_chunk_rows == 0) {  // auto: as farthing train would size it, for the budget planned here
    const int64_t budget = a.budget_gb > 0.0 ? int64_t(a.budget_gb * double(int64_t(1) << 30))
                           : fit != nullptr  ? int64_t(train::kDeviceMemoryShare * double(fit->memory_bytes))
                                             : train::training_memory_budget(train::resolve_train_device(config.train.device));
    config.model.loss_chunk_rows = train::fit_loss_chunk_rows(config, model.config, a.world_size, budget);
    std::fprintf(stderr, "farthing plan: model.loss_chunk_rows 0 (auto): %lld rows for a budget of %s\n",
                 (long long)config.model.loss_chunk_rows, train::format_bytes(budget).c_str());
  }
  const train::MemoryEstimate estimate = train::estimate_memory(config, model.config, a.world_size);
  std::optional<train::BudgetCheck> budget;
  if (a.budget_gb > 0.0) budget = train::check_budget(estimate, int64_t(a.budget_gb * double(int64_t(1) << 30)));

  std::optional<StepTimePlan> step_time;
  if (!a.interconnect.empty()) step_time = plan_step_time(a, config, model.config);
  if (a.json) {
    nlohmann::json j = to_json(a, config, model, estimate);
    if (step_time) j["step_time"] = step_time_json(*step_time);
    if (budget) j["budget"] = {{"bytes", int64_t(a.budget_gb * double(int64_t(1) << 30))}, {"fits", budget->fits},
                               {"message", budget->message}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(a, config, model, estimate);
    if (step_time) print_step_time(a, config, *step_time);
    if (fit != nullptr) {
      const train::FitResult result = train::fit_to_device(
          config, model.config, a.world_size, int64_t(train::kDeviceMemoryShare * double(fit->memory_bytes)), *fit->rates);
      std::printf("%s", train::fit_table(config, model.config, a.world_size, *fit, result).c_str());
    }
    if (!a.roofline.empty()) {
      farthing::train::print_roofline(config, model.config, estimate, *farthing::train::roofline_device(a.roofline),
                                    a.measure_ops);
    }
  }
  if (!budget) return 0;
  if (!budget->fits) {
    std::fprintf(stderr, "farthing plan: %s\n", budget->message.c_str());
    return 1;
  }
  if (!a.json) std::printf("\n%s\n", budget->message.c_str());  // JSON output stays one object
  return 0;
}

// A device of the roofline's datasheets (h100, h200, rtx4090).
CLI::Validator known_device() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        return train::roofline_device(name) != nullptr && train::fit_device(name) != nullptr
                   ? ""
                   : "'" + name + "' is not a known device (" + train::kRooflineDeviceNames + ")";
      },
      "", std::string("one of ") + train::kRooflineDeviceNames);
}

VerbRun define_plan(CLI::App& verb) {
  namespace cli = farthing::cli;
  auto a = std::make_shared<PlanArgs>();
  verb.add_option("RECIPE", a->recipe, "a YAML recipe (as for farthing train)")->required();
  cli::add_set_option(verb, a->overrides);
  verb.add_option("--world-size", a->world_size,
                  "ranks to plan for (ZeRO shards the master and optimizer state, stage 2 the\n"
                  "gradients, stage 3 the weights too)")
      ->type_name("N")
      ->capture_default_str()
      ->check(cli::whole_number_at_least(1));
  verb.add_option("--preset", a->preset,
                  "take the architecture from preset NAME instead of model.path's config, to plan\n"
                  "before downloading the weights (e.g. --preset llama3.1-8b)")
      ->type_name("NAME");
  verb.add_option("--budget-gb", a->budget_gb, "exit 1 with a message when the predicted peak exceeds X GiB (2^30 bytes)")
      ->type_name("X")
      ->check(cli::positive_number());
  verb.add_flag("--json", a->json, "one JSON object instead of the table");
  const std::string step_time = "Step time (docs/scaling.md), at ZeRO stages 1-3 on --world-size ranks";
  const std::string paper = "On paper, at a device's datasheet rates (tables only)";
  verb.add_option("--interconnect", a->interconnect,
                   "nvlink, ib400, ib200, eth100 (nominal links), link:RATE:LATENCY (by hand,\n"
                   "e.g. link:1gbit:1ms), or a file of measured ones (farthing bench dist --out FILE)")
      ->type_name("X")
      ->group(step_time);
  verb.add_option("--ranks-per-node", a->ranks_per_node,
                   "with link:RATE:LATENCY, the ranks that share each node's link (mpirun fills nodes\n"
                   "in turn); their traffic to each other does not use it")
      ->type_name("H")
      ->capture_default_str()
      ->check(cli::whole_number_at_least(1))
      ->group(step_time);
  verb.add_option("--profile", a->profile,
                   "the compute of each turn, measured by farthing bench dist --out at the\n"
                   "recipe's micro_batch and seq_len")
      ->type_name("FILE")
      ->group(step_time);
  verb.add_option("--compute-tflops", a->compute_tflops, "or: the compute from the model's FLOPs at R TFLOP/s achieved per rank")
      ->type_name("R")
      ->check(cli::positive_number())
      ->group(step_time);
  verb.add_option("--memory-gbs", a->memory_gbs,
                   "the optimizer step's memory bandwidth per rank with --compute-tflops\n"
                   "(default: an H100 SXM's HBM3)")
      ->type_name("M")
      ->capture_default_str()
      ->check(cli::positive_number())
      ->group(step_time);
  verb.add_option("--roofline", a->roofline,
                   "also the step at DEVICE's datasheet rates: every op's FLOPs and bytes, its time\n"
                   "at the roofline, and the MFU the design can reach, with activations as built and\n"
                   "the bf16 design")
      ->type_name("DEVICE")
      ->check(known_device())
      ->group(paper);
  verb.add_option("--fit", a->fit,
                   "the cut of the recipe's batch (micro_batch x grad_accum), recomputation and\n"
                   "model.loss_chunk_rows that fit DEVICE's memory (90% of it) and run fastest at its\n"
                   "roofline, beside the recipe as written")
      ->type_name("DEVICE")
      ->check(known_device())
      ->group(paper);
  verb.add_flag("--measure-ops", a->measure_ops,
                  "with --roofline: also run each row's calls on this machine's device (the recipe's\n"
                  "train.device; auto: a GPU where one is visible), shape by shape, and print the\n"
                  "measured time beside the roofline's")
      ->group(paper);
  verb.footer("Memory per rank of training RECIPE, before anything is allocated: bytes per parameter by category\n"
              "(weights, grads, master, optimizer state; docs/design.md, \"Memory per parameter\"), activations,\n"
              "communication buffers, and the predicted peak (what the trainer's memory tracker reports as\n"
              "peak_mem_bytes in metrics.jsonl).");
  return [a] { return run_plan(*a); };
}

const VerbRegistration kPlan{"plan", "memory per rank of a recipe before allocating, and its step time on N ranks",
                             define_plan};

}  // namespace

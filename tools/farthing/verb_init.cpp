// verb_init.cpp — `farthing init MODEL_FILE [--data FILE] [--tokenizer PATH] [--budget-gb X]
// [--device cpu|cuda|auto] [--out RECIPE]`: a guided first run. Reads the model's config (no weights decoded for
// safetensors, GGUF and llama2.c files) and the data (init_data.h: its kind, every document's
// length, and for chat data the template found and the BOS/EOS it needs), then walks a ladder
// of settings from the most comfortable (fp32 AdamW state, fp32 master, 8 sequences per
// micro-batch) to the most frugal (8-bit moments, no master, stochastic rounding, per-block
// activation checkpointing, one sequence, shorter sequences), sizing each with `farthing plan`'s
// estimate, and writes the first that fits the budget as a recipe with every knob commented, to
// stdout or --out. seq_len, eval_fraction, the sequences a step takes and the steps follow the
// data (train/plan/data_sizing.h) within the rung's limits, its sequences counted as the run
// will pack them under the data.packing written; a step larger than the training split is
// warned about. Without --data (and no data/train.txt) it sizes without data. The
// budget: --budget-gb, else 90% of GPU 0's free memory when training on CUDA (--device cuda, or
// auto with a GPU visible), else 80% of this machine's MemAvailable.
// Relies on: train/plan/memory_estimate.h, train/plan/data_sizing.h, train/recipe,
// train/loop/model_source.h, framework/ckpt/read_model.h, init_data.h.
// Tested by: tests/cli/test_init.sh, tests/train/plan/test_data_sizing.cpp.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/ckpt/read_model.h"
#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "train/recipe/recipe.h"
#include "train/loop/model_source.h"
#include "train/plan/data_sizing.h"
#include "train/plan/device_fit.h"
#include "train/plan/memory_estimate.h"
#include "models/common/model_config.h"
#include "models/common/weights_from_file.h"
#include "tools/farthing/init_data.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;

struct InitArgs {
  std::string model_path, data = "data/train.txt", tokenizer, out, device = "auto";
  bool data_given = false;
  double budget_gb = -1.0;  // <= 0: from the device's memory
};

struct Rung {
  const char* state;
  const char* master;
  const char* rounding;
  const char* checkpointing;
  int64_t micro_batch;
  int64_t seq_len_cap;
  const char* why;  // what this rung gives up, for the header
};

// From the most comfortable to the most frugal; the first that fits is written.
constexpr Rung kLadder[] = {
    {"f32", "f32", "nearest", "none", 8, 1024, "fp32 AdamW state and master (16 B/param), no recompute"},
    {"8bit", "f32", "stochastic", "none", 8, 1024, "8-bit moments (saves 6 B/param)"},
    {"8bit", "f32", "stochastic", "per_block", 4, 1024, "8-bit moments, per-block activation checkpointing"},
    {"8bit", "none", "stochastic", "per_block", 4, 1024, "8-bit moments, no master (stochastic rounding)"},
    {"8bit", "none", "stochastic", "per_block", 1, 1024, "8-bit, no master, one sequence per micro-batch"},
    {"8bit", "none", "stochastic", "per_block", 1, 512, "8-bit, no master, one sequence of <= 512 tokens"},
    {"8bit", "none", "stochastic", "per_block", 1, 256, "8-bit, no master, one sequence of <= 256 tokens"},
};

std::string gib(double bytes) { return farthing::train::format_bytes(int64_t(bytes)); }

// YAML's double-quoted form of a path.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// What the recipe's data-dependent keys get, for one rung of the ladder.
struct Sizing {
  int64_t seq_len = 0;
  double eval_fraction = 0.05;
  int64_t micro_batch = 1, grad_accum = 1;
  int64_t steps = 100, warmup_steps = 10, eval_every = 25, save_every = 50;
  std::string steps_comment = "optimizer steps in total (a resumed run continues to this)";
};

// A Sizing for a rung: from the data's documents when it was read, else the fixed defaults.
Sizing sizing_for(const Rung& r, int64_t model_max_seq_len, const farthing::cli::InitData* data,
                  farthing::train::DataSizing* data_sizing) {
  Sizing z;
  const int64_t cap = std::min<int64_t>(r.seq_len_cap, model_max_seq_len > 0 ? model_max_seq_len : r.seq_len_cap);
  if (data == nullptr) {
    z.seq_len = cap;
    z.micro_batch = r.micro_batch;
    z.grad_accum = std::max<int64_t>(1, 8 / r.micro_batch);
    return z;
  }
  // Counted as the run packs: data.packing as written, data.long_documents as it defaults.
  const farthing::train::DataSizing d = farthing::train::size_to_data(
      data->documents, cap, data->packing, farthing::recipe::DataSection{}.long_documents);
  if (data_sizing) *data_sizing = d;
  z.seq_len = d.seq_len;
  z.eval_fraction = d.eval_fraction;
  z.micro_batch = std::min(r.micro_batch, d.step_sequences);
  z.grad_accum = (d.step_sequences + z.micro_batch - 1) / z.micro_batch;
  z.steps = d.steps;
  z.warmup_steps = std::min<int64_t>(10, d.steps / 10);
  z.eval_every = std::max<int64_t>(1, d.steps / 4);
  z.save_every = std::max<int64_t>(1, d.steps / 2);
  const int64_t step = z.micro_batch * z.grad_accum;
  char comment[160];
  std::snprintf(comment, sizeof comment, "%.1f epochs of the %lld training sequences at %lld a step",
                d.train_sequences > 0 ? double(z.steps * step) / double(d.train_sequences) : 0.0,
                (long long)d.train_sequences, (long long)step);
  z.steps_comment = comment;
  return z;
}

std::string number(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

std::string recipe_text(const std::string& model_path, const std::string& tokenizer, const std::string& data,
                        const farthing::cli::InitData& d, const Rung& r, const Sizing& z, const std::string& run_dir,
                        const std::string& device) {
  std::ostringstream y;
  y << "model:\n"
    << "  path: " << quoted(model_path) << "  # HF dir, .safetensors, .gguf, llama2.c .bin or a training checkpoint\n"
    << "  tokenizer: " << quoted(tokenizer)
    << "  # \"\": the GGUF's own, or tokenizer.json beside an HF model; llama2.c needs its tok*.bin\n"
    << "  activation_checkpointing: " << r.checkpointing
    << "  # per_block: keep block inputs, recompute in backward (~1/3 more compute, far less memory)\n"
    << "  loss_chunk_rows: 64  # logits rows alive at once in the loss: fewer = less memory, more passes\n"
    << "\ndata:\n"
    << "  train: " << quoted(data) << "  # your .txt, .jsonl (text / prompt+response / chat messages) or .tok file\n"
    << "  eval: \"\"  # held-out file; \"\" splits eval_fraction off train\n"
    << "  format: auto  # auto picks by extension; text|jsonl|tokens force a reader\n"
    << "  eval_fraction: " << number(z.eval_fraction)
    << "  # share of sequences held out: more = steadier eval loss, less training data\n"
    << "  seq_len: " << z.seq_len << "  # tokens per sequence: longer = more context, activations grow linearly\n"
    << "  packing: " << farthing::recipe::enum_name(d.packing) << "  # " << d.packing_comment << "\n"
    << "  shuffle: true  # deterministic per-epoch shuffle (train.seed); false keeps file order\n"
    << "  chat_template: " << quoted(d.chat_template) << "  # " << d.chat_template_comment << "\n"
    << "  add_bos: " << (d.add_bos ? "true" : "false") << "  # " << d.add_bos_comment << "\n"
    << "  add_eos: " << (d.add_eos ? "true" : "false") << "  # " << d.add_eos_comment << "\n"
    << "\noptimizer:\n"
    << "  name: adamw  # the only optimizer for now\n"
    << "  lr: 2.0e-5  # peak learning rate for full fine-tuning: higher adapts faster, forgets more\n"
    << "  beta1: 0.9  # momentum of the first moment\n"
    << "  beta2: 0.95  # second-moment decay: 0.95 reacts faster to gradient spikes than 0.999\n"
    << "  eps: 1.0e-8  # keeps m / sqrt(v) finite where v is ~0\n"
    << "  weight_decay: 0.01  # decoupled decay on matrices (not norms/biases): mild regularisation\n"
    << "  state: " << r.state << "  # f32: 8 B/param of moments; 8bit: ~2 B/param, tracks fp32 AdamW closely\n"
    << "  master: " << r.master << "  # f32: fp32 master copy (4 B/param), no update rounded away; none: bf16 only\n"
    << "  weight_rounding: " << r.rounding
    << "  # stochastic: small updates survive on average (needed without a master)\n"
    << "  embedding_f32_state: true  # fp32 moments for embeddings/head, which quantize badly\n"
    << "\nschedule:\n"
    << "  kind: cosine  # cosine decay after warmup; constant|linear_warmup|linear also available\n"
    << "  warmup_steps: " << z.warmup_steps
    << "  # linear warmup from 0: avoids early large steps on a fresh optimizer state\n"
    << "  min_ratio: 0.1  # final lr as a fraction of lr\n"
    << "\ntrain:\n"
    << "  steps: " << z.steps << "  # " << z.steps_comment << "\n"
    << "  micro_batch: " << z.micro_batch
    << "  # sequences per forward/backward: more = faster, more activation memory\n"
    << "  grad_accum: " << z.grad_accum << "  # micro-batches per step (bigger batch, same memory): "
    << z.micro_batch << "x" << z.grad_accum << "x" << z.seq_len << " = " << z.micro_batch * z.grad_accum * z.seq_len
    << " tokens/step\n"
    << "  max_grad_norm: 1.0  # clip the global gradient norm (0: off); guards against loss spikes\n"
    << "  precision: bf16  # bf16 compute, fp32 accumulation; fp32 is exact but several times slower\n"
    << "  device: " << device << "  # cpu|cuda|auto: where the model and its state live; init sized this recipe for "
    << (device == "cuda" ? "the GPU's" : "the CPU's") << " memory\n"
    << "  optimizer_in_backward: false  # true frees each grad as it is used but forbids clipping/accum\n"
    << "  seed: 1234  # init, shuffle and stochastic rounding: same seed = same run, bit for bit\n"
    << "  eval_every: " << z.eval_every << "  # steps between evaluations (0: only first and last)\n"
    << "  eval_batches: 4  # micro-batches per evaluation (0: whole eval set, slower but exact)\n"
    << "  log_every: 1  # progress line every N steps (0: none); metrics.jsonl records every step\n"
    << "  nonfinite: skip  # skip (and count) a step with inf/nan gradients; fail stops the run\n"
    << "\ncheckpoint:\n"
    << "  run_dir: " << quoted(run_dir) << "  # recipe.yaml, metrics.jsonl, TensorBoard files, checkpoints/\n"
    << "  save_every: " << z.save_every << "  # steps between checkpoints (0: only at the end); each costs a full state write\n"
    << "  keep_last: 2  # newest checkpoints kept (0: all): disk vs. how far back you can resume\n"
    << "\ndistributed:\n"
    << "  zero_stage: 1  # ZeRO-1: optimizer state + master sharded over mpirun's ranks (none with one)\n"
    << "\nmetrics:\n"
    << "  tensorboard: true  # event files in run_dir: tensorboard --logdir " << run_dir << "\n";
  return y.str();
}

int run_init(const InitArgs& a) {
  const std::string& model_path = a.model_path;
  const std::string& data = a.data;
  const std::string& tokenizer = a.tokenizer;
  const std::string& out = a.out;
  const bool data_given = a.data_given;
  const double budget_gb = a.budget_gb;
  std::string device = a.device;
  FARTHING_CHECK(fs::exists(model_path), "init: model file '", model_path,
                 "' does not exist; give an HF model directory, a .safetensors, .gguf or llama2.c .bin file");
  FARTHING_CHECK(out.empty() || !fs::exists(out), "init: ", out,
                 " already exists; pick another --out (init never overwrites a recipe)");
  FARTHING_CHECK(!data_given || fs::is_regular_file(data), "init: --data '", data,
                 "' does not exist or is not a file; give your .txt, .jsonl or .tok training data");
  const farthing::models::ModelConfig model =
      farthing::models::model_config_from_file(farthing::ckpt::open_model_file(model_path));
  // The data, read as the trainer will read it (with the tokenizer it will use), when it is there.
  std::optional<farthing::cli::InitData> init_data;
  if (fs::is_regular_file(data)) {
    farthing::recipe::ModelSection section;
    section.path = model_path;
    section.tokenizer = tokenizer;
    const bool token_file = farthing::data::dataset_format(data, farthing::data::DataFormat::kAuto) ==
                            farthing::data::DataFormat::kTokens;
    const farthing::train::ModelSource source = farthing::train::open_model_source(section, !token_file);
    init_data = farthing::cli::read_init_data(data, source.tokenizer.get(), model.vocab_size);
  }
  const farthing::cli::InitData data_settings = init_data ? *init_data : farthing::cli::InitData{};
  if (device == "auto") device = farthing::visible_cuda_devices() > 0 ? "cuda" : "cpu";
  double budget_bytes = budget_gb * double(int64_t(1) << 30);
  std::string budget_source = "--budget-gb";
  if (budget_gb <= 0.0 && device == "cuda") {
    // The recipe trains on GPU 0 (each rank's own GPU under mpirun): size it to that GPU's free
    // memory, leaving 10% for the CUDA context, cuBLAS workspaces and fragmentation.
    FARTHING_CHECK(farthing::visible_cuda_devices() > 0,
                   "init: --device cuda, but no CUDA device is visible (no driver or GPU, or this farthing was "
                   "built without CUDA); pass --budget-gb X with the GPU's memory, or use --device cpu");
    const farthing::DeviceMemory gpu = farthing::cuda_device_memory_of(0);
    budget_bytes = farthing::train::kDeviceMemoryShare * double(gpu.free_bytes);
    budget_source = "90% of GPU 0's free memory (" + gib(double(gpu.free_bytes)) + " of " +
                    gib(double(gpu.total_bytes)) + ")";
  } else if (budget_gb <= 0.0) {
    const double available = farthing::train::host_memory_available_bytes();
    FARTHING_CHECK(available > 0.0, "init: cannot read MemAvailable from /proc/meminfo; pass --budget-gb X");
    budget_bytes = farthing::train::kHostMemoryShare * available;
    budget_source = "80% of this machine's available memory (" + gib(available) + ")";
  }
  std::string stem = fs::path(model_path).filename().string();
  if (stem.empty()) stem = fs::path(model_path).parent_path().filename().string();
  const std::string run_dir = "runs/" + fs::path(stem).stem().string() + "_finetune";

  const Rung* chosen = nullptr;
  std::string yaml;
  Sizing sizing;
  farthing::train::DataSizing data_sizing;
  farthing::train::MemoryEstimate estimate;
  for (const Rung& r : kLadder) {
    sizing = sizing_for(r, model.max_seq_len, init_data ? &*init_data : nullptr, &data_sizing);
    yaml = recipe_text(model_path, tokenizer, data, data_settings, r, sizing, run_dir, device);
    const farthing::recipe::RunConfig config = farthing::recipe::parse_recipe_text(yaml, "farthing init");
    estimate = farthing::train::estimate_memory(config, model, 1);
    chosen = &r;
    if (double(estimate.peak_bytes) <= budget_bytes) break;
  }
  // What the data gave, for the header and stderr; and the step that outgrows its split.
  std::string data_line = "# No data read (" + data + (data_given ? "" : " is not there") +
                          "): seq_len, eval_fraction, the batch and the steps are defaults; rerun with --data FILE.\n";
  std::string warning;
  if (init_data) {
    data_line = "# Data: " + data + ", " + init_data->kind + "; " + data_sizing.why + ": seq_len " +
                std::to_string(sizing.seq_len) + " packs " + std::to_string(data_sizing.sequences) + " sequence(s), " +
                std::to_string(data_sizing.train_sequences) + " to train on, " +
                std::to_string(data_sizing.eval_sequences) + " held out.\n";
    const int64_t step = sizing.micro_batch * sizing.grad_accum;
    if (step > data_sizing.train_sequences) {
      warning = "one step takes " + std::to_string(step) + " sequences of " + std::to_string(sizing.seq_len) +
                " tokens, more than the " + std::to_string(data_sizing.train_sequences) +
                " the training split holds: each step repeats them; this data is too small for a useful run";
    }
  }
  const bool fits = double(estimate.peak_bytes) <= budget_bytes;
  const std::string target = out.empty() ? "RECIPE.yaml" : out;
  std::ostringstream text;
  text << "# build/bin/farthing train " << target << "\n"
       << "# Written by `farthing init " << model_path << (init_data ? " --data " + data : std::string())
       << "`: a starter recipe for "
       << (model.name.empty() ? "this model" : model.name) << " (" << estimate.param_count << " parameters).\n"
       << "# Sized for " << gib(budget_bytes) << ", " << budget_source << ": " << chosen->why << ".\n"
       << "# Predicted peak per rank (farthing plan " << target << "): " << gib(double(estimate.peak_bytes))
       << (fits ? "" : " -- MORE than the budget, even at the most frugal settings") << ".\n"
       << data_line
       << (warning.empty() ? "" : "# WARNING: " + warning + ".\n")
       << "# See what the trainer sees: farthing data preview " << target << "; check memory with farthing plan.\n"
       << "# loss_scale (fp16 only) and model.init_std (random init only) keep their defaults\n"
       << "# (train/recipe/run_config.h).\n"
       << "# Change any knob without editing this file: --set section.key=value.\n\n"
       << yaml;
  if (out.empty()) {
    std::printf("%s", text.str().c_str());
  } else {
    std::ofstream file(out);
    file << text.str();
    FARTHING_CHECK(file.good(), "init: cannot write ", out, "; check that its directory exists and is writable");
    std::fprintf(stderr, "farthing init: wrote %s (predicted peak %s of %s)\n", out.c_str(),
                 gib(double(estimate.peak_bytes)).c_str(), gib(budget_bytes).c_str());
  }
  std::fprintf(stderr, "farthing init: %s", data_line.substr(2).c_str());
  if (!warning.empty()) std::fprintf(stderr, "farthing init: warning: %s\n", warning.c_str());
  if (!fits) {
    std::fprintf(stderr,
                 "farthing init: even the most frugal settings need %s per rank, more than the %s budget; "
                 "use more ranks (mpirun -np N with distributed.zero_stage: 3) or a machine with more memory\n",
                 gib(double(estimate.peak_bytes)).c_str(), gib(budget_bytes).c_str());
    return 1;
  }
  return 0;
}

VerbRun define_init(CLI::App& verb) {
  auto a = std::make_shared<InitArgs>();
  verb.add_option("MODEL_FILE", a->model_path,
                  "HF directory, .safetensors, .gguf, llama2.c .bin or a training checkpoint .h5")
      ->required();
  verb.add_option("--data", a->data,
                  "training data (.txt, .jsonl or .tok). Read to size seq_len, eval_fraction, the batch\n"
                  "and the steps, and for chat data to set the chat template and BOS/EOS; without it\n"
                  "(no data/train.txt) the recipe is sized blind")
      ->type_name("FILE")
      ->capture_default_str()
      ->each([a](const std::string&) { a->data_given = true; });
  verb.add_option("--tokenizer", a->tokenizer, "tokenizer, when the model file has none beside or inside it (llama2.c)")
      ->type_name("PATH");
  verb.add_option("--budget-gb", a->budget_gb,
                  "memory to plan for, GiB; default 90% of the GPU's free memory when the recipe\n"
                  "trains on CUDA, else 80% of MemAvailable in /proc/meminfo")
      ->type_name("X")
      ->check(farthing::cli::positive_number());
  verb.add_option("--device", a->device,
                  "where the recipe trains (train.device) and whose memory sizes it; auto: cuda when\n"
                  "a GPU is visible, else cpu")
      ->type_name("cpu|cuda|auto")
      ->capture_default_str()
      ->check(farthing::cli::one_of({"cpu", "cuda", "auto"}));
  verb.add_option("--out", a->out, "write the recipe there (never over an existing file) instead of stdout")
      ->type_name("RECIPE");
  verb.footer("A starter recipe for fine-tuning MODEL_FILE on this machine, every knob commented: the most\n"
              "comfortable optimizer and batch settings whose predicted peak (farthing plan's estimate) fits\n"
              "the budget.");
  return [a] { return run_init(*a); };
}

const VerbRegistration kInit{"init", "write a starter recipe for a model, sized to this machine's memory", define_init};

}  // namespace

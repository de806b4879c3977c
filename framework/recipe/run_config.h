// run_config.h — everything a training run is asked to do, typed: what a recipe YAML becomes
// after parsing (recipe.h) and what the trainer (framework/train) consumes.
//
// One struct per YAML section, fields named exactly as the YAML keys, defaults as a user of
// torchtune would expect. Units: steps count optimizer steps; batch sizes count sequences.
// validate_run_config() (recipe.h) checks every field and every combination before anything is
// allocated, naming the file, line, key, value and what was expected.
// Relies on: nothing (plain data). Tested by: tests/recipes/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace farthing::recipe {

// model: which architecture and which weights. Give exactly one of `preset` (architecture from
// code, random init) or `path` (weights whose own config gives the architecture).
struct ModelSection {
  std::string preset;           // a models/ preset ("stories260k", "smollm2-135m"...), or "" with `path`
  std::string path;             // weights to start from: HF dir / .safetensors / .gguf / llama2.c .bin
                                // ("" with a preset: random init from train.seed)
  std::string tokenizer;        // tokenizer file or dir ("": next to `path`, or from the GGUF)
  std::string activation_checkpointing = "none";  // "none" | "per_block"
  int64_t loss_chunk_rows = 64;  // rows of logits alive at once in the fused cross-entropy
  double init_std = 0.02;        // random init only

  bool operator==(const ModelSection&) const = default;
};

// data: where tokens come from and how they become sequences.
struct DataSection {
  std::string train;            // .txt, .jsonl or a token file (.tok) from `farthing tokenize`
  std::string eval;             // optional held-out file; "" splits eval_fraction off `train`
  std::string format = "auto";  // "auto" (by extension) | "text" | "jsonl" | "tokens"
  double eval_fraction = 0.05;  // share of packed sequences held out when `eval` is ""
  int64_t seq_len = 256;        // tokens per sequence
  bool shuffle = true;          // deterministic per-epoch shuffle keyed by train.seed
  bool add_bos = true;          // BOS before each document when the tokenizer has one
  bool add_eos = true;          // EOS after each document when the tokenizer has one
  // JSONL "messages" lines: "auto" (the tokenizer's own template: tokenizer_config.json beside
  // tokenizer.json, or the GGUF's), a format (llama3, llama3_instruct, qwen2_5, smollm2, chatml),
  // or a path to a tokenizer_config.json or Jinja file.
  std::string chat_template = "auto";

  bool operator==(const DataSection&) const = default;
};

// optimizer: AdamW and how its state is stored (NUMERICS.md §4, §6, §7).
struct OptimizerSection {
  std::string name = "adamw";   // only "adamw" for now
  double lr = 2e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;   // not applied to norms and biases
  std::string state = "8bit";   // moments: "f32" | "bf16" | "8bit" | "4bit"
  std::string master = "f32";   // "f32" | "remainder16" | "none"
  std::string weight_rounding = "stochastic";  // master -> bf16 weight: "nearest" | "stochastic"
  bool embedding_f32_state = true;  // keep fp32 moments for embeddings and the output head

  bool operator==(const OptimizerSection&) const = default;
};

// schedule: the learning-rate multiplier (framework/optim/lr_schedule.h).
struct ScheduleSection {
  std::string kind = "cosine";  // "constant" | "linear_warmup" | "cosine" | "linear"
  int64_t warmup_steps = 0;
  double min_ratio = 0.1;       // final lr as a fraction of optimizer.lr

  bool operator==(const ScheduleSection&) const = default;
};

// loss_scale: fp16 dynamic loss scaling (NUMERICS.md §5); ignored for fp32 and bf16.
struct LossScaleSection {
  double initial = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // finite steps before the scale grows

  bool operator==(const LossScaleSection&) const = default;
};

// fp8: FP8 linear layers under train.precision fp8 (framework/backend/fp8_policy.h); ignored
// otherwise. Defaults follow DeepSeek-V3: E4M3 everywhere, 1 x 128 / 128 x 128 tiles.
struct Fp8Section {
  std::string scaling = "block";      // "block" | "tensor_current" | "tensor_delayed"
  std::string input = "e4m3";         // activations entering a linear layer: "e4m3" | "e5m2"
  std::string weight = "e4m3";        // "e4m3" | "e5m2"
  std::string grad_output = "e4m3";   // gradients entering its backward: "e4m3" | "e5m2" (TE's hybrid)
  int margin = 0;                     // scales leave 2^margin of headroom below the format's max
  bool power_of_two_scales = true;    // exact rescaling; the CPU emulation is then exact
  int amax_history_len = 16;          // tensor_delayed: steps of amax kept
  std::string amax_compute = "max";   // tensor_delayed: "max" | "most_recent" of the history
  std::string layers = "all";         // which block projections: "all" | "mlp" | "attention"

  bool operator==(const Fp8Section&) const = default;
};

// train: the loop.
struct TrainSection {
  int64_t steps = 100;               // optimizer steps in total (a resumed run continues to this)
  int64_t micro_batch = 4;           // sequences per forward/backward on each rank
  int64_t grad_accum = 1;            // micro-batches per optimizer step on each rank
  double max_grad_norm = 1.0;        // 0: no clipping
  std::string precision = "bf16";    // "fp32" | "bf16" | "fp16" | "fp8" (bf16 + FP8 linear layers: fp8 section)
  // Where weights, gradients, optimizer state and activations live: "cpu"; "cuda" (each rank on
  // its node-local GPU; not yet run on a GPU by farthing's tests); "auto" (cuda when a GPU is
  // visible); "strict", the test device (CPU kernels over memory the host may not touch:
  // backend/strict_device_backend.h).
  std::string device = "cpu";
  bool optimizer_in_backward = false;  // step each unit as its gradients are ready
  uint64_t seed = 1234;              // init, shuffle and stochastic-rounding key
  int64_t eval_every = 0;            // 0: only before the first and after the last step
  int64_t eval_batches = 4;          // micro-batches per evaluation (0: the whole eval set)
  int64_t log_every = 1;             // progress line every N steps (metrics.jsonl gets every step; 0: none)
  std::string nonfinite = "skip";    // non-finite gradients: "skip" the step (counted) | "fail"

  bool operator==(const TrainSection&) const = default;
};

// checkpoint: where the run lives and how often it saves.
struct CheckpointSection {
  std::string run_dir = "runs/default";  // recipe.yaml, metrics.jsonl, checkpoints/
  int64_t save_every = 0;                // 0: only at the end
  int keep_last = 2;                     // keep the newest K checkpoints (0: all)

  bool operator==(const CheckpointSection&) const = default;
};

// distributed: ZeRO over the ranks of mpirun (world size 1 is the same code).
struct DistributedSection {
  int zero_stage = 1;  // 1: optimizer state + master sharded; 2: + gradients; 3: + parameters

  bool operator==(const DistributedSection&) const = default;
};

// metrics: what the run writes beside metrics.jsonl (always written) for looking at it.
struct MetricsSection {
  bool tensorboard = true;  // TensorBoard event files in run_dir (`tensorboard --logdir RUN_DIR`)

  bool operator==(const MetricsSection&) const = default;
};

struct RunConfig {
  std::string source;  // the recipe file ("" when built in code)
  ModelSection model;
  DataSection data;
  OptimizerSection optimizer;
  ScheduleSection schedule;
  LossScaleSection loss_scale;
  Fp8Section fp8;
  TrainSection train;
  CheckpointSection checkpoint;
  DistributedSection distributed;
  MetricsSection metrics;
  // Where each key was set, for error messages: "optimizer.lr" -> "recipe.yaml:7:7" (the value
  // in the YAML file, 1-based line:column) or "--set optimizer.lr=3e-4" (an override); and each
  // section present in the file, "data" -> "recipe.yaml:5:1". Keys left at their defaults, and
  // configs built in code, have no entry. Not part of the run's identity (resolved YAML omits it).
  std::map<std::string, std::string> key_locations;
};

}  // namespace farthing::recipe

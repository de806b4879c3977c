// run_config.h — everything a training run is asked to do, typed: what a recipe YAML becomes
// after parsing (recipe.h) and what the trainer (train/loop) consumes.
//
// One struct per YAML section, fields named exactly as the YAML keys, defaults as a user of
// torchtune would expect. Units: steps count optimizer steps; batch sizes count sequences.
// validate_run_config() (recipe.h) checks every field and every combination before anything is
// allocated, naming the file, line, key, value and what was expected.
//
// Enum-like keys are typed, parsed once (recipe_scalar.cpp) through the names table of their
// enum (EnumNames, enum_names.h), and compared as enums by every consumer. An enum a lower layer
// already defines is used as it is (optim's state format, master mode, weight rounding and lr
// schedule kind; backend's FP8 scaling, format, amax compute and layers; models' activation
// checkpointing; data's format); those the recipe alone knows (precision, grad dtype, device,
// nonfinite, optimizer name) are defined here. The specialisations of EnumNames for all of them are below.
// Relies on: enum_names.h, data/dataset_options.h, optim/optim_config.h, optim/lr_schedule.h,
// backend/fp8_policy.h, models/common/transformer.h (the enums). Tested by: tests/train/recipe/.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/backend/fp4_policy.h"
#include "framework/backend/fp8_policy.h"
#include "framework/data/dataset_options.h"
#include "framework/dist/communicator.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/optim_config.h"
#include "kernels/numerics/gemm_plan_book.h"
#include "train/recipe/enum_names.h"
#include "models/common/transformer.h"

namespace farthing::recipe {

// train.precision. fp8 is bf16 compute with FP8 linear layers on top (the fp8 section); nvfp4
// and mxfp4 are bf16 compute with FP4 linear layers on top (the nvfp4 / mxfp4 section).
enum class Precision : uint8_t { kFp32, kBf16, kFp16, kFp8, kNvfp4, kMxfp4 };
inline constexpr std::array<std::pair<Precision, std::string_view>, 6> kPrecisionNames{{
    {Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"}, {Precision::kFp16, "fp16"}, {Precision::kFp8, "fp8"},
    {Precision::kNvfp4, "nvfp4"}, {Precision::kMxfp4, "mxfp4"}}};

// train.device: a choice, resolved to a farthing::Device by the trainer (auto: cuda when a GPU
// is visible).
enum class TrainDevice : uint8_t { kCpu, kCuda, kAuto, kStrict };
inline constexpr std::array<std::pair<TrainDevice, std::string_view>, 4> kTrainDeviceNames{{
    {TrainDevice::kCpu, "cpu"}, {TrainDevice::kCuda, "cuda"}, {TrainDevice::kAuto, "auto"}, {TrainDevice::kStrict, "strict"}}};

// train.nonfinite: what a step with non-finite gradients does.
enum class Nonfinite : uint8_t { kSkip, kFail };
inline constexpr std::array<std::pair<Nonfinite, std::string_view>, 2> kNonfiniteNames{{
    {Nonfinite::kSkip, "skip"}, {Nonfinite::kFail, "fail"}}};

// train.profile: off, or ops (every op of each step timed: backend/op_profiler.h; profile.json
// in the run directory and a table at the run's end).
enum class StepProfileMode : uint8_t { kOff, kOps };
inline constexpr std::array<std::pair<StepProfileMode, std::string_view>, 2> kStepProfileModeNames{{
    {StepProfileMode::kOff, "off"}, {StepProfileMode::kOps, "ops"}}};

// train.gemm_algorithm: how a GPU's GEMM plans pick among cuBLASLt's algorithms
// (kernels/numerics/gemm_plan_book.h; docs/cuda_ops.md "GEMM plans").
using kernels::GemmAlgorithmChoice;
inline constexpr std::array<std::pair<GemmAlgorithmChoice, std::string_view>, 2> kGemmAlgorithmNames{{
    {GemmAlgorithmChoice::kHeuristic, "heuristic"}, {GemmAlgorithmChoice::kTimed, "timed"}}};

// train.grad_dtype: what one backward's kept gradient is stored as (one rank, grad_accum 1; sums
// over micro-batches or ranks are fp32 whatever this says: docs/parameter_store.md). auto: fp32
// under precision fp32 (the reference setting must not round its gradients), bf16 otherwise.
enum class GradDtype : uint8_t { kAuto, kFp32, kBf16 };
inline constexpr std::array<std::pair<GradDtype, std::string_view>, 3> kGradDtypeNames{{
    {GradDtype::kAuto, "auto"}, {GradDtype::kFp32, "fp32"}, {GradDtype::kBf16, "bf16"}}};

// data.format: the data layer's enum (auto picks a reader by extension and magic).
using data::DataFormat;
using data::kDataFormatNames;
using data::kLongDocumentsNames;
using data::kPackingNames;
using data::LongDocuments;
using data::Packing;

// optimizer.name.
enum class OptimizerName : uint8_t { kAdamW };
inline constexpr std::array<std::pair<OptimizerName, std::string_view>, 1> kOptimizerNames{{{OptimizerName::kAdamW, "adamw"}}};

// model.activation_checkpointing (models' enum; models/ names it nowhere, so its table is here).
inline constexpr std::array<std::pair<models::Checkpointing, std::string_view>, 2> kCheckpointingNames{{
    {models::Checkpointing::kNone, "none"}, {models::Checkpointing::kPerBlock, "per_block"}}};

template <> struct EnumNames<Precision> { static constexpr const auto& table = kPrecisionNames; };
inline constexpr std::array<std::pair<ReduceOrder, std::string_view>, 2> kReduceOrderNames{{
    {ReduceOrder::kOrdered, "ordered"}, {ReduceOrder::kNative, "native"}}};
template <> struct EnumNames<TrainDevice> { static constexpr const auto& table = kTrainDeviceNames; };
template <> struct EnumNames<ReduceOrder> { static constexpr const auto& table = kReduceOrderNames; };
template <> struct EnumNames<Nonfinite> { static constexpr const auto& table = kNonfiniteNames; };
template <> struct EnumNames<StepProfileMode> { static constexpr const auto& table = kStepProfileModeNames; };
template <> struct EnumNames<GradDtype> { static constexpr const auto& table = kGradDtypeNames; };
template <> struct EnumNames<GemmAlgorithmChoice> { static constexpr const auto& table = kGemmAlgorithmNames; };
template <> struct EnumNames<DataFormat> { static constexpr const auto& table = kDataFormatNames; };
template <> struct EnumNames<Packing> { static constexpr const auto& table = kPackingNames; };
template <> struct EnumNames<LongDocuments> { static constexpr const auto& table = kLongDocumentsNames; };
template <> struct EnumNames<OptimizerName> { static constexpr const auto& table = kOptimizerNames; };
template <> struct EnumNames<models::Checkpointing> { static constexpr const auto& table = kCheckpointingNames; };
template <> struct EnumNames<optim::StateFormat> { static constexpr const auto& table = optim::kStateFormatNames; };
template <> struct EnumNames<optim::MasterMode> { static constexpr const auto& table = optim::kMasterModeNames; };
template <> struct EnumNames<optim::WeightRounding> { static constexpr const auto& table = optim::kWeightRoundingNames; };
template <> struct EnumNames<optim::Offload> { static constexpr const auto& table = optim::kOffloadNames; };
template <> struct EnumNames<optim::LrScheduleKind> { static constexpr const auto& table = optim::kLrScheduleKindNames; };
template <> struct EnumNames<Fp8Scaling> { static constexpr const auto& table = kFp8ScalingNames; };
template <> struct EnumNames<Fp8Format> { static constexpr const auto& table = kFp8FormatNames; };
template <> struct EnumNames<Fp8AmaxCompute> { static constexpr const auto& table = kFp8AmaxComputeNames; };
template <> struct EnumNames<Fp8Layers> { static constexpr const auto& table = kFp8LayersNames; };
template <> struct EnumNames<Fp4Scale> { static constexpr const auto& table = kFp4ScaleNames; };
template <> struct EnumNames<Fp4WeightScaling> { static constexpr const auto& table = kFp4WeightScalingNames; };
template <> struct EnumNames<Fp4Gemms> { static constexpr const auto& table = kFp4GemmsNames; };
template <> struct EnumNames<Fp4Rht> { static constexpr const auto& table = kFp4RhtNames; };
template <> struct EnumNames<Fp4Sr> { static constexpr const auto& table = kFp4SrNames; };

// model: which architecture and which weights. Give exactly one of `preset` (architecture from
// code, random init) or `path` (weights whose own config gives the architecture).
struct ModelSection {
  std::string preset;           // a models/ preset ("stories260k", "smollm2-135m"...), or "" with `path`
  std::string path;             // weights to start from: HF dir / .safetensors / .gguf / llama2.c .bin
                                // ("" with a preset: random init from train.seed)
  std::string tokenizer;        // tokenizer file or dir ("": next to `path`, or from the GGUF)
  models::Checkpointing activation_checkpointing = models::Checkpointing::kNone;  // none | per_block
  // Rows of logits alive at once in the fused cross-entropy; each chunk re-reads the head's weight
  // and gradient. 0 (auto): the whole micro-batch where the plan's peak with it fits the device's
  // memory, else the largest power of two down to 64 that fits (train/plan/device_fit.h).
  int64_t loss_chunk_rows = 64;
  double init_std = 0.02;        // random init only
  // bf16 compute (without FP8 / FP4 layers): store the activations ModelOptions::bf16_activations
  // names as bf16, each rounded once where it is produced. false keeps them fp32 and narrows each
  // GEMM operand instead: more memory and bandwidth, the reference that bf16 storage is judged by.
  bool bf16_activations = true;

  bool operator==(const ModelSection&) const = default;
};

// data: where tokens come from and how they become sequences.
struct DataSection {
  std::string train;            // .txt, .jsonl or a token file (.tok) from `farthing tokenize`
  std::string eval;             // optional held-out file; "" splits eval_fraction off `train`
  DataFormat format = DataFormat::kAuto;  // auto (by extension and magic) | text | jsonl | tokens
  double eval_fraction = 0.05;  // share of packed sequences held out when `eval` is ""
  int64_t seq_len = 256;        // tokens per sequence
  // auto | documents | stream | none (framework/data/dataset_options.h). auto: documents for
  // prompt/response and chat messages (each example sees only itself, positions restarting),
  // stream for plain text and token files (pre-training).
  Packing packing = Packing::kAuto;
  // A document longer than seq_len under documents / none: truncate | split | error
  LongDocuments long_documents = LongDocuments::kSplit;
  bool shuffle = true;          // deterministic per-epoch shuffle keyed by train.seed
  bool add_bos = true;          // BOS before each document when the tokenizer has one
  bool add_eos = true;          // EOS after each document when the tokenizer has one
  // JSONL "messages" lines: "auto" (the tokenizer's own template: tokenizer_config.json beside
  // tokenizer.json, or the GGUF's), a format (llama3, llama3_instruct, qwen2_5, smollm2, chatml),
  // or a path to a tokenizer_config.json or Jinja file.
  std::string chat_template = "auto";

  bool operator==(const DataSection&) const = default;
};

// optimizer: AdamW and how its state is stored (docs/numerics.md §4, §6, §7).
struct OptimizerSection {
  OptimizerName name = OptimizerName::kAdamW;  // adamw, the one optimizer
  double lr = 2e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;   // not applied to norms and biases
  optim::StateFormat state = optim::StateFormat::kBlock8;  // moments: f32 | bf16 | 8bit | 4bit
  optim::MasterMode master = optim::MasterMode::kF32;      // f32 | remainder16 | none
  // master -> bf16 weight: nearest | stochastic
  optim::WeightRounding weight_rounding = optim::WeightRounding::kStochastic;
  bool embedding_f32_state = true;  // keep fp32 moments for embeddings and the output head
  // none: master and moments on the training device; host: in host memory, each shard's step
  // run there by the CPU kernels, gradients and weights copied through a ring of
  // offload_ring_units shards' host buffers (docs/parameter_store.md, "Optimizer offload").
  optim::Offload offload = optim::Offload::kNone;
  int64_t offload_ring_units = 2;

  bool operator==(const OptimizerSection&) const = default;
};

// schedule: the learning-rate multiplier (framework/optim/lr_schedule.h).
struct ScheduleSection {
  optim::LrScheduleKind kind = optim::LrScheduleKind::kCosine;  // constant | linear_warmup | cosine | linear
  int64_t warmup_steps = 0;
  double min_ratio = 0.1;       // final lr as a fraction of optimizer.lr

  bool operator==(const ScheduleSection&) const = default;
};

// loss_scale: fp16 dynamic loss scaling (docs/numerics.md §5); ignored for fp32 and bf16.
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
  Fp8Scaling scaling = Fp8Scaling::kBlock;  // block | tensor_current | tensor_delayed
  Fp8Format input = Fp8Format::kE4M3;       // activations entering a linear layer: e4m3 | e5m2
  Fp8Format weight = Fp8Format::kE4M3;      // e4m3 | e5m2
  Fp8Format grad_output = Fp8Format::kE4M3;  // gradients entering its backward: e4m3 | e5m2 (TE's hybrid)
  int margin = 0;                     // scales leave 2^margin of headroom below the format's max
  bool power_of_two_scales = true;    // exact rescaling; the CPU emulation is then exact
  int amax_history_len = 16;          // tensor_delayed: steps of amax kept
  Fp8AmaxCompute amax_compute = Fp8AmaxCompute::kMax;  // tensor_delayed: max | most_recent of the history
  Fp8Layers layers = Fp8Layers::kAll;  // which block projections: all | mlp | attention

  bool operator==(const Fp8Section&) const = default;
};

// train: the loop.
struct TrainSection {
  int64_t steps = 100;               // optimizer steps in total (a resumed run continues to this)
  int64_t micro_batch = 4;           // sequences per forward/backward on each rank
  int64_t grad_accum = 1;            // micro-batches per optimizer step on each rank
  double max_grad_norm = 1.0;        // 0: no clipping
  // fp32 | bf16 | fp16 | fp8 (bf16 + FP8 linear layers: fp8 section) | nvfp4 | mxfp4 (bf16 + FP4
  // linear layers: the nvfp4 / mxfp4 section)
  Precision precision = Precision::kBf16;
  // nvfp4 / mxfp4 on a CUDA device below compute capability 10 (no FP4 tensor cores): true runs
  // the exact emulation on the device (bf16 GEMMs of the dequantized operands); false refuses.
  // From sm_100 cuBLASLt's block-scaled FP4 GEMM runs whatever this says (docs/fp4.md).
  bool fp4_gpu_emulation = false;
  // cuDNN's attention backward (bf16 compute on a GPU): true asks for its deterministic
  // algorithm, so a step repeats bit for bit (exact resume, np=N equal to np=1); false lets cuDNN
  // pick its faster nondeterministic one (dq summed with atomics), and those no longer hold.
  // Every other backend and kernel is deterministic whatever this says.
  bool deterministic_attention = true;
  // How each GEMM plan on a GPU picks its cuBLASLt algorithm. heuristic: the heuristic's first,
  // the same on every rank and in every run (np=N equal to np=1, exact resume, nothing kept).
  // timed: up to 8 of the heuristic's results timed once per shape on the first step; rank 0's
  // fastest then run on every rank and are kept in checkpoints, so ranks agree and resume is exact,
  // but two separate runs (np=N against np=1 among them) may pick different algorithms and differ
  // in the last bits. Nothing changes on the CPU, whose GEMM tiles depend on the shape alone.
  GemmAlgorithmChoice gemm_algorithm = GemmAlgorithmChoice::kHeuristic;
  // One backward's kept gradient: auto (fp32 under precision fp32, else bf16) | fp32 | bf16.
  // Sums over micro-batches or ranks are fp32 whatever this says.
  GradDtype grad_dtype = GradDtype::kAuto;
  // Where weights, gradients, optimizer state and activations live: cpu; cuda (each rank on
  // its node-local GPU; run on one H200: docs/results.md); auto (cuda when a GPU is
  // visible); strict, the test device (CPU kernels over memory the host may not touch:
  // backend/strict_device_backend.h).
  TrainDevice device = TrainDevice::kCpu;
  bool optimizer_in_backward = false;  // step each unit as its gradients are ready
  uint64_t seed = 1234;              // init, shuffle and stochastic-rounding key
  int64_t eval_every = 0;            // 0: only before the first and after the last step
  int64_t eval_batches = 4;          // micro-batches per evaluation (0: the whole eval set)
  int64_t log_every = 1;             // progress line every N steps (metrics.jsonl gets every step; 0: none)
  Nonfinite nonfinite = Nonfinite::kSkip;  // non-finite gradients: skip the step (counted) | fail
  // ops: time every Backend and NnOps call of each step (off: nothing extra runs).
  StepProfileMode profile = StepProfileMode::kOff;

  bool operator==(const TrainSection&) const = default;
};

// checkpoint: where the run lives and how often it saves.
struct CheckpointSection {
  std::string run_dir = "runs/default";  // recipe.yaml, metrics.jsonl, checkpoints/
  int64_t save_every = 0;                // 0: only at the end
  int keep_last = 2;                     // keep the newest K checkpoints (0: all)
  // false: a run that reaches train.steps ends without saving (a benchmark or a throughput check,
  // where an 8B model's final write is most of the wall time); a stop signal still saves.
  bool save_final = true;
  // A save (collective MPI-IO) that has not finished after this many seconds ends the job with a
  // line naming the step and the ranks that did not arrive (a node went silent mid-save; the
  // save's MPI-IO is outside distributed.collective_timeout_s). 0: wait forever.
  double save_timeout_s = 1800.0;

  bool operator==(const CheckpointSection&) const = default;
};

// distributed: ZeRO over the ranks of mpirun (world size 1 is the same code).
struct DistributedSection {
  int zero_stage = 1;  // 1: optimizer state + master sharded; 2: + gradients; 3: + parameters
  // A collective that waits longer than this ends the job with an error naming the rank and the
  // collective (a peer died or hung; Communicator::set_collective_timeout). 0: wait forever.
  double collective_timeout_s = 600.0;
  // Float sums over ranks (ZeRO's gradients, the loss, the optimizer's norms): ordered (fixed
  // rank order: np=N bit-identical to np=1) or native (MPI's or NCCL's own algorithm: faster on
  // large worlds, not bitwise). Communicator.h's ReduceOrder.
  ReduceOrder reduce = ReduceOrder::kOrdered;
  // The gradient reductions left in flight while backward goes on, in MiB of what they hold
  // (each finished unit's fp32 accumulator and its received block): more overlaps communication
  // with the next units' backward, and holds more memory, which `farthing plan` counts. 0: each
  // unit's reduction finishes before backward goes on. The sums are the same bits either way.
  double reduce_bucket_mib = 0.0;

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
  // nvfp4 / mxfp4: the FP4 recipes under train.precision nvfp4 / mxfp4, every knob defaulting to
  // its paper (framework/backend/fp4_policy.h, docs/fp4.md); each ignored under other precisions.
  Fp4Recipe nvfp4 = kNvfp4Paper;
  Fp4Recipe mxfp4 = kMxfp4Paper;
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

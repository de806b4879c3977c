// test_memory_estimate.cpp — `farthing plan`'s arithmetic (train/plan/memory_estimate.h)
// against real training: for several configurations the real Trainer (at the test's world size)
// takes two steps and the memory tracker's peak is compared with the prediction, in total and per
// category, and so is the peak while the Trainer is built (loading model.path, or a preset's
// first weights unit by unit). Every stage, the optimizer in backward, tied and untied heads,
// bf16 and fp32 kept gradients, the master read by the compute. The budget check refuses a plan
// that does not fit. Under mpirun (np 2, 3) each rank checks its own prediction.
// Data is a token file of random ids, so neither a tokenizer nor ../shared is needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "framework/ckpt/safetensors.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/data/token_file.h"
#include "framework/dist/mpi_communicator.h"
#include "train/plan/memory_estimate.h"
#include "train/loop/model_options.h"
#include "train/loop/trainer.h"
#include "tests/train/loop/trainer_test_support.h"
#include "models/common/fp8_linears.h"
#include "models/common/presets.h"

namespace farthing::train {
namespace {

namespace fs = std::filesystem;

using testing::world;
struct TempDir : testing::TempDir {
  explicit TempDir(const std::string& name) : testing::TempDir("memest_" + name) {}
};

constexpr int64_t kVocab = 512;  // stories260k's

fs::path write_random_tokens(const fs::path& dir) { return testing::write_random_tokens(dir, kVocab, 40000, 7); }

recipe::RunConfig base_config(const fs::path& dir) {
  recipe::RunConfig c;
  c.model.preset = "stories260k";
  c.data.train = write_random_tokens(dir).string();
  c.data.format = recipe::DataFormat::kTokens;
  c.data.seq_len = 64;
  c.data.eval_fraction = 0.05;
  c.train.steps = 2;
  c.train.micro_batch = 4;
  c.train.eval_batches = 1;
  c.train.log_every = 0;
  c.schedule.warmup_steps = 0;
  c.checkpoint.run_dir = (dir / "run").string();
  return c;
}

// The numerics most cases vary: compute precision, AdamW's moments and its master.
void set_numerics(recipe::RunConfig& c, recipe::Precision precision, optim::StateFormat state, optim::MasterMode master) {
  c.train.precision = precision;
  c.optimizer.state = state;
  c.optimizer.master = master;
}

struct Measured {
  int64_t peak = 0;
  std::array<int64_t, kNumMemoryCategories> category_peaks{};
  int64_t construction_peak = 0;  // while the Trainer was built
  int64_t loading_peak = 0;       // when its first weights had been set up (before the activations)
};

// Builds the real Trainer and trains; the tracker's peaks while building it and over training
// (evaluations and checkpoints included), less what was held before the trainer existed.
Measured train_and_measure(const recipe::RunConfig& config, Device device = Device::cpu()) {
  MemoryTracker& tracker = memory_tracker(device);
  tracker.reset_peaks();
  const MemorySnapshot before = tracker.snapshot();
  Measured m;
  {
    Trainer trainer(config, world(), TrainerOutput{.progress = false});
    m.construction_peak = tracker.snapshot().total_peak_bytes - before.total_current_bytes;
    m.loading_peak = trainer.loading_peak_bytes() - before.total_current_bytes;
    tracker.reset_peaks();
    trainer.train();
    const MemorySnapshot after = tracker.snapshot();
    m.peak = after.total_peak_bytes - before.total_current_bytes;
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      m.category_peaks[size_t(c)] = after.peak_bytes[size_t(c)] - before.current_bytes[size_t(c)];
    }
  }
  return m;
}

// The prediction for this rank of however many ranks run the test (np 1, or under mpirun).
void expect_within_10_percent(const recipe::RunConfig& config, const models::ModelConfig& model, const char* label) {
  const MemoryEstimate e = estimate_memory(config, model, world().world_size(), world().rank());
  const Measured m = train_and_measure(config);
  std::printf("[%s] predicted peak %lld B (%s), measured peak %lld B (%s), ratio %.4f; peak at %s\n", label,
              (long long)e.step_peak_bytes, format_bytes(e.step_peak_bytes).c_str(), (long long)m.peak,
              format_bytes(m.peak).c_str(), double(e.step_peak_bytes) / double(m.peak), e.step_peak_moment.c_str());
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    std::printf("    %-16s predicted %10lld  measured %10lld\n", std::string(memory_category_name(MemoryCategory(c))).c_str(),
                (long long)e.step_bytes[size_t(c)], (long long)m.category_peaks[size_t(c)]);
  }
  std::printf("    %-16s predicted %10lld  measured %10lld\n", "while loading", (long long)e.load_peak_bytes,
              (long long)m.loading_peak);
  // The contract `farthing plan` promises: the predicted peak within 10% of the measured one.
  EXPECT_NEAR(double(e.step_peak_bytes), double(m.peak), 0.10 * double(m.peak)) << label;
  // Every figure the estimate adds up is its owner's statement of what it allocates (AdamW's,
  // the ParamStore's and the Transformer's sizes, per run and per unit in use, and the model's
  // schedule of which units are held together), so the estimate is exact, in total and category
  // by category: any difference means an owner's statement no longer matches its code
  // (adamw.cpp, param_store.cpp, transformer.cpp), or the trainer allocates something new.
  EXPECT_EQ(e.step_peak_bytes, m.peak) << label;
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    const auto category = MemoryCategory(c);
    EXPECT_EQ(e.bytes(category), m.category_peaks[size_t(c)])
        << label << ": " << memory_category_name(category) << " drifted from what the trainer allocates";
  }
  // Building the trainer: loading model.path or a preset's first weights unit by unit, then the
  // model's activations.
  EXPECT_EQ(e.load_peak_bytes, m.loading_peak) << label << ": the peak while loading the first weights";
  EXPECT_EQ(std::max(e.load_peak_bytes, e.built_bytes), m.construction_peak) << label << ": the peak while building";
}

// An HF safetensors directory (config.json + weights ~ N(0, 0.02), seeded) for `config`, so a
// test can train from model.path without ../shared.
void write_random_safetensors(const models::ModelConfig& config, const std::filesystem::path& dir, unsigned seed) {
  ckpt::ModelFile file;
  file.format = "safetensors";
  file.config = nlohmann::json::parse(models::config_to_hf_json(config));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const models::TransformerSpec spec = models::make_spec(config);  // named: the loop reads its layout
  for (const models::ParamEntry& entry : spec.layout.entries()) {
    ckpt::ModelTensor t = ckpt::make_model_tensor(entry.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
    file.tensors.emplace(entry.name, std::move(t));
  }
  if (world().rank() == 0) ckpt::write_safetensors(dir, file);
  world().barrier();
}

TEST(MemoryEstimate, Bf16Compute8BitStateF32Master) {
  TempDir dir("bf16_8bit");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  c.optimizer.embedding_f32_state = false;  // let the 8-bit segments include the big embedding
  expect_within_10_percent(c, models::preset_config("stories260k"), "bf16, 8bit state, f32 master");
}

// optimizer.offload host on the strict device: the device's figures (its own tracker) exclude
// the master and moments, and the host's tracker holds exactly what the plan's host figures say.
recipe::RunConfig offloaded_on_strict_device(const fs::path& dir) {
  recipe::RunConfig c = base_config(dir);
  c.train.device = recipe::TrainDevice::kStrict;
  c.train.precision = recipe::Precision::kBf16;
  c.optimizer.offload = optim::Offload::kHost;
  return c;
}

TEST(MemoryEstimate, OffloadedOptimizerOnTheStrictDevice) {
  TempDir dir("offload");
  recipe::RunConfig c = offloaded_on_strict_device(dir.path);
  c.optimizer.state = optim::StateFormat::kBlock8;
  c.optimizer.master = optim::MasterMode::kF32;
  c.optimizer.offload_ring_units = 3;
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), world().world_size(), world().rank());
  EXPECT_EQ(e.held_bytes(MemoryCategory::kMaster), 0);
  EXPECT_EQ(e.held_bytes(MemoryCategory::kOptimizerState), e.optimizer.step_sums);  // the step's sums stay on the device
  EXPECT_GT(e.host_bytes(), e.optimizer.master + e.optimizer.state());  // and the ring
  // docs/design.md §6's per-parameter cost: the device's rows hold no master or moments; the
  // host's are what the device would hold without offload.
  recipe::RunConfig resident = c;
  resident.optimizer.offload = optim::Offload::kNone;
  const MemoryEstimate r = estimate_memory(resident, models::preset_config("stories260k"), world().world_size(),
                                           world().rank());
  EXPECT_EQ(e.nominal.master, 0.0);
  EXPECT_EQ(e.nominal.moments, 0.0);
  EXPECT_GT(r.nominal.master, 0.0);
  EXPECT_GT(r.nominal.moments, 0.0);
  EXPECT_EQ(e.nominal_host.master, r.nominal.master);
  EXPECT_EQ(e.nominal_host.moments, r.nominal.moments);
  EXPECT_EQ(e.nominal.weights, r.nominal.weights);
  EXPECT_EQ(e.nominal.grads, r.nominal.grads);
  const Measured m = train_and_measure(c, Device::strict());
  // Over several ranks the strict device's collectives are staged through the host
  // (StagedCommunicator): the MPI temporaries the plan puts among the device's comm buffers are
  // the host's there, so the total and that category are compared at world size 1 only.
  const bool one_rank = world().world_size() == 1;
  if (one_rank) {
    EXPECT_EQ(e.step_peak_bytes, m.peak);
  }
  for (int k = 0; k < kNumMemoryCategories; ++k) {
    if (!one_rank && MemoryCategory(k) == MemoryCategory::kCommBuffers) continue;
    EXPECT_EQ(e.bytes(MemoryCategory(k)), m.category_peaks[size_t(k)]) << memory_category_name(MemoryCategory(k));
  }
  // The host: what a built trainer holds there beyond what was held before it.
  MemoryTracker& host = memory_tracker(Device::cpu());
  host.reset_peaks();
  const MemorySnapshot before = host.snapshot();
  Trainer trainer(c, world(), TrainerOutput{.progress = false});
  const MemorySnapshot after = host.snapshot();
  if (world().world_size() == 1) {  // (over several ranks the staged collectives' host buffers come on top)
    EXPECT_EQ(after.total_peak_bytes - before.total_current_bytes, e.host_load_peak_bytes) << "the host while building";
  }
  const auto held = [&](MemoryCategory k) { return after.current_bytes[size_t(k)] - before.current_bytes[size_t(k)]; };
  EXPECT_EQ(held(MemoryCategory::kMaster), e.optimizer.master);
  EXPECT_EQ(held(MemoryCategory::kOptimizerState), e.optimizer.state());
  // Over several ranks the staged collectives hold host buffers of their own beside the ring.
  if (world().world_size() == 1) {
    EXPECT_EQ(held(MemoryCategory::kCommBuffers), e.optimizer.host_ring);
  }
  // Each of the 3 slots holds the largest shard's gradients as the store hands them over (bf16:
  // one backward at one rank; fp32 sums over several), then its bf16 weights, each 64-byte aligned.
  int64_t largest = 0;
  for (const optim::ShardSpec& s : trainer.zero_layout().owned_shards()) largest = std::max(largest, int64_t(s.numel));
  const int64_t grad_bytes = world().world_size() == 1 ? 2 : 4;
  const auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  EXPECT_EQ(e.optimizer.host_ring, 3 * (aligned(largest * grad_bytes) + largest * 2));
}

// With remainder16 init_master stages a shard's f32 values and its bf16 weights on the host (6
// B/element), more than one unit's fp32 first values: the host's peak while the trainer is built.
TEST(MemoryEstimate, OffloadedRemainder16StagesOneShardOnTheHostWhileBuilding) {
  TempDir dir("offload_r16");
  recipe::RunConfig c = offloaded_on_strict_device(dir.path);
  c.optimizer.master = optim::MasterMode::kRemainder16;
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), world().world_size(), world().rank());
  if (world().world_size() == 1) {
    EXPECT_GT(e.optimizer.host_init_staging, e.initial_weights);
  }
  MemoryTracker& host = memory_tracker(Device::cpu());
  host.reset_peaks();
  const MemorySnapshot before = host.snapshot();
  { Trainer trainer(c, world(), TrainerOutput{.progress = false}); }
  const int64_t peak = host.snapshot().total_peak_bytes - before.total_current_bytes;
  if (world().world_size() == 1) {
    EXPECT_EQ(peak, e.host_load_peak_bytes);
  } else {  // the staged collectives' host buffers come on top
    EXPECT_GE(peak, e.host_load_peak_bytes);
  }
}

TEST(MemoryEstimate, Fp32ComputeF32StateGradAccum) {
  TempDir dir("fp32_accum");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kFp32, optim::StateFormat::kF32, optim::MasterMode::kF32);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  c.train.grad_accum = 2;
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp32, f32 state, grad_accum 2");
}

TEST(MemoryEstimate, Bf16PerBlockCheckpointingNoMasterAccum) {
  TempDir dir("bf16_ckpt");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBlock8, optim::MasterMode::kNone);
  c.optimizer.weight_rounding = optim::WeightRounding::kStochastic;
  c.model.activation_checkpointing = models::Checkpointing::kPerBlock;
  c.train.grad_accum = 3;
  c.train.micro_batch = 8;
  expect_within_10_percent(c, models::preset_config("stories260k"), "bf16, 8bit state, no master, per_block, accum 3");
}

// FP8 linear layers: the operand slots, the GEMM workspace (the CPU emulation's dequantized
// operands) and each unit's quantized weights, made on acquire and freed with the unit.
TEST(MemoryEstimate, Fp8BlockScaling) {
  TempDir dir("fp8_block");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kFp8, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp8 block scaling, 8bit state, f32 master");
}

// FP4 linear layers (docs/fp4.md): the two operand slots, the cast's fp32 workspace, the
// Hadamard transform's signs and the emulated GEMM's workspace, beside bf16 compute's buffers.
// NVFP4 with its defaults (2-D weight blocks, RHT on the weight gradients, the last block in
// bf16), then MXFP4 (bf16 forward, FP4 backward).
TEST(MemoryEstimate, Nvfp4Recipe) {
  TempDir dir("nvfp4");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kNvfp4, optim::StateFormat::kF32, optim::MasterMode::kF32);
  expect_within_10_percent(c, models::preset_config("stories260k"), "nvfp4, f32 state, f32 master");
}

TEST(MemoryEstimate, Mxfp4RecipeZeroStage2GradAccum) {
  TempDir dir("mxfp4");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kMxfp4, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  c.distributed.zero_stage = 2;
  c.train.grad_accum = 2;
  expect_within_10_percent(c, models::preset_config("stories260k"), "mxfp4, 8bit state, f32 master, zero2, accum 2");
}

// train.device: cuda sizes the FP8 GEMM workspace as cuBLASLt needs it (kernels/numerics/
// fp8_workspace.h), not as the CPU emulation does; nothing else in the plan moves. (No GPU here:
// the CUDA allocation itself is checked by the GPU check script, not by this test.)
TEST(MemoryEstimate, Fp8WorkspaceIsTheDevicesEngine) {
  TempDir dir("fp8_device");
  recipe::RunConfig c = base_config(dir.path);
  c.train.precision = recipe::Precision::kFp8;
  const models::ModelConfig model = models::preset_config("stories260k");
  const MemoryEstimate cpu = estimate_memory(c, model, world().world_size());
  c.train.device = recipe::TrainDevice::kCuda;
  const MemoryEstimate cuda = estimate_memory(c, model, world().world_size());
  const models::TransformerSpec spec = models::make_spec(model);
  const Fp8Recipe fp8 = fp8_recipe_of(c);
  const int64_t lt = models::Fp8Linears::buffer_bytes(spec, c.train.micro_batch, c.data.seq_len, fp8,
                                                      numerics::Fp8GemmEngine::kCublasLt);
  const int64_t emulated = models::Fp8Linears::buffer_bytes(spec, c.train.micro_batch, c.data.seq_len, fp8,
                                                            numerics::Fp8GemmEngine::kEmulated);
  EXPECT_EQ(cpu.model_buffers.fp8, emulated);
  EXPECT_EQ(cuda.model_buffers.fp8, lt);
  EXPECT_GE(lt, numerics::kFp8LtScratchBytes);  // cuBLASLt's own scratch is part of it
  EXPECT_GT(lt, emulated);
  EXPECT_EQ(cuda.bytes(MemoryCategory::kActivations) - cpu.bytes(MemoryCategory::kActivations),
            lt - emulated + cuda.ops_workspace);  // the ops' workspace: the next case
  EXPECT_EQ(cuda.model_state_bytes(), cpu.model_state_bytes());
}

// train.device: cuda under bf16 compute counts, with the activations, the bf16 copies that cuDNN
// attention's backward carves from the CUDA ops' workspace (framework/backend/cuda_ops_workspace.h)
// of what the model keeps fp32: qkv, O, dO and dqkv under FP8 layers, each on a 256-byte boundary;
// none under bf16 activations, which store all four as bf16. The CPU takes no such workspace, and
// fp32 compute runs no cuDNN.
TEST(MemoryEstimate, CudaOpsWorkspaceCountsAttentionsBf16Copies) {
  TempDir dir("ops_workspace");
  recipe::RunConfig c = base_config(dir.path);
  const models::ModelConfig model = models::preset_config("stories260k");  // dim 64, 8 heads (4 kv) of 8
  const int64_t rows = c.train.micro_batch * c.data.seq_len, qkv = rows * (8 + 2 * 4) * 8, out = rows * 64;
  const auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  for (recipe::Precision precision : {recipe::Precision::kBf16, recipe::Precision::kFp8, recipe::Precision::kFp32}) {
    c.train.precision = precision;
    c.train.device = recipe::TrainDevice::kCpu;
    const MemoryEstimate cpu = estimate_memory(c, model, world().world_size());
    c.train.device = recipe::TrainDevice::kCuda;
    const MemoryEstimate cuda = estimate_memory(c, model, world().world_size());
    int64_t expected = 0;
    if (precision == recipe::Precision::kFp8) expected = 2 * aligned(qkv * 2) + 2 * aligned(out * 2);
    const std::string name(recipe::enum_name(precision));
    EXPECT_EQ(cpu.ops_workspace, 0) << name;
    EXPECT_EQ(cuda.ops_workspace, expected) << name;
    if (precision != recipe::Precision::kFp8) {  // FP8's GEMM workspace also differs (the case above)
      EXPECT_EQ(cuda.bytes(MemoryCategory::kActivations) - cpu.bytes(MemoryCategory::kActivations), expected) << name;
    }
  }
}

// GPT-2's four linears have biases: on CUDA each bf16 output's bias operand (rounded to bf16) and
// each bias gradient (fp32, as cuBLASLt's epilogue writes it) is carved from the ops' workspace,
// the widest (the in-projection's 3072) at 4 bytes a value; attention takes no copies under bf16
// activations, so that is the workspace the plan counts. Nothing of the outputs is staged.
TEST(MemoryEstimate, CudaOpsWorkspaceCountsGpt2sBiasOperands) {
  TempDir dir("ops_workspace_gpt2");
  recipe::RunConfig c = base_config(dir.path);
  c.model.preset = "gpt2-124m";
  const models::ModelConfig model = models::preset_config("gpt2-124m");
  c.train.precision = recipe::Precision::kBf16;
  c.train.device = recipe::TrainDevice::kCuda;
  const auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  EXPECT_EQ(estimate_memory(c, model, world().world_size()).ops_workspace, aligned(model.hidden_dim * 4));
}

// FP8 per-tensor delayed scaling over ZeRO-3 with per-block recomputation and accumulation.
TEST(MemoryEstimate, Fp8DelayedZeroStage3PerBlock) {
  TempDir dir("fp8_delayed_zero3");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 3;
  c.train.precision = recipe::Precision::kFp8;
  c.fp8.scaling = Fp8Scaling::kTensorDelayed;
  c.fp8.layers = Fp8Layers::kMlp;
  c.model.activation_checkpointing = models::Checkpointing::kPerBlock;
  c.train.grad_accum = 2;
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp8 delayed, mlp only, zero3, per_block, accum 2");
}

// GPT-2 family (fused c_attn, biases, positional embedding, F = H) from a safetensors directory:
// model.path instead of a preset, so the load-time peak is predicted as well.
TEST(MemoryEstimate, Gpt2FromSafetensorsDir) {
  TempDir dir("gpt2");
  models::ModelConfig gpt2;
  gpt2.name = "tiny-gpt2";
  gpt2.family = models::ModelFamily::kGpt2;
  gpt2.vocab_size = kVocab;
  gpt2.dim = 64;
  gpt2.hidden_dim = 256;
  gpt2.n_layers = 2;
  gpt2.n_heads = 4;
  gpt2.n_kv_heads = 4;
  gpt2.max_seq_len = 128;
  gpt2.tied_embeddings = true;
  write_random_safetensors(gpt2, dir.path / "model", 3);

  recipe::RunConfig c = base_config(dir.path);
  c.model.preset = "";
  c.model.path = (dir.path / "model").string();
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBf16, optim::MasterMode::kRemainder16);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  const MemoryEstimate e = estimate_memory(c, gpt2, 1);
  EXPECT_GT(e.load_peak_bytes, 0);
  expect_within_10_percent(c, gpt2, "gpt2 from safetensors, bf16 state, remainder16 master");
}

// An untied Llama with its loss in one chunk, two micro-batches: alone, every unit's gradients
// are kept in place (docs/parameter_store.md): no accumulator, only the 1-D tensors' sums and the
// embedding's rows per distinct token (M x C) as scratch. The plan says so and matches the run.
TEST(MemoryEstimate, UntiedLlamaGradientsInPlace) {
  TempDir dir("untied");
  models::ModelConfig llama = models::preset_config("stories260k");
  llama.name = "untied-stories260k";
  llama.tied_embeddings = false;
  write_random_safetensors(llama, dir.path / "model", 5);
  recipe::RunConfig c = base_config(dir.path);
  c.model.preset = "";
  c.model.path = (dir.path / "model").string();
  c.model.loss_chunk_rows = c.train.micro_batch * c.data.seq_len;
  c.train.grad_accum = 2;
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  const MemoryEstimate e = estimate_memory(c, llama, world().world_size(), world().rank());
  if (world().world_size() == 1) {
    EXPECT_EQ(e.grad_accumulator_elems, 0);
    EXPECT_GE(e.grad_in_place_elems, e.param_count);
  } else {
    EXPECT_EQ(e.grad_in_place_elems, 0);
  }
  expect_within_10_percent(c, llama, "untied llama, loss in one chunk, accum 2: gradients in place");
  // One micro-batch a step at ZeRO-1: over several ranks too, each rank's gradients are written
  // into its whole kept copy and all-reduced there, with no accumulator. (Alone, one backward's
  // gradient is kept in bf16: written into accumulators and narrowed.)
  c.train.grad_accum = 1;
  c.distributed.zero_stage = 1;
  c.checkpoint.run_dir = (dir.path / "run_accum1").string();
  const MemoryEstimate one = estimate_memory(c, llama, world().world_size(), world().rank());
  if (world().world_size() > 1) {
    EXPECT_EQ(one.grad_accumulator_elems, 0);
    EXPECT_GE(one.grad_in_place_elems, one.param_count);
  } else {
    EXPECT_EQ(one.grad_in_place_elems, 0);
  }
  expect_within_10_percent(c, llama, "untied llama, loss in one chunk, accum 1, ZeRO-1: gradients in place");
}

// Precision fp32 with train.grad_dtype auto keeps one backward's gradient in fp32 (the reference
// setting must not train on bf16 gradients); grad_dtype bf16 keeps it in bf16
// as before. One micro-batch per step: on one rank the gradient is one backward's.
TEST(MemoryEstimate, Fp32ComputeKeepsOneBackwardsGradientInFp32) {
  TempDir dir("fp32_one_backward");
  recipe::RunConfig c = base_config(dir.path);
  set_numerics(c, recipe::Precision::kFp32, optim::StateFormat::kF32, optim::MasterMode::kF32);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  ASSERT_EQ(c.train.grad_dtype, recipe::GradDtype::kAuto);
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), world().world_size());
  EXPECT_EQ(e.grad_bytes_per_elem, 4);  // fp32 at every world size: one backward's (np 1) or a sum
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp32, grad_dtype auto, one micro-batch");
  c.train.grad_dtype = recipe::GradDtype::kBf16;
  c.checkpoint.run_dir = (dir.path / "run_bf16").string();
  const MemoryEstimate bf16 = estimate_memory(c, models::preset_config("stories260k"), world().world_size());
  EXPECT_EQ(bf16.grad_bytes_per_elem, world().world_size() == 1 ? 2 : 4);  // sums over ranks stay fp32
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp32, grad_dtype bf16, one micro-batch");
}

// ZeRO-3: units gathered when used (over several ranks), the GEMMs reading the bf16 weights, the
// owned fp32 gradient sums over two micro-batches; tied head (the embedding's gradients live from
// the head to the end of backward).
TEST(MemoryEstimate, ZeroStage3Bf16GradAccum) {
  TempDir dir("zero3_bf16");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 3;
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  c.train.grad_accum = 2;
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), 1);
  EXPECT_EQ(e.model_buffers.params + e.model_buffers.grads + e.model_buffers.working, 0);
  EXPECT_EQ(e.grad_bytes_per_elem, 4);  // summed over two micro-batches: fp32
  int64_t category_sum = 0;  // categories may peak at different moments; here all at the last block's reduce-scatter
  for (int64_t b : e.step_bytes) category_sum += b;
  EXPECT_LE(e.step_peak_bytes, category_sum);
  expect_within_10_percent(c, models::preset_config("stories260k"), "zero3, bf16, 8bit state, f32 master, accum 2");
}

// The optimizer step fused into backward: no gradient sums, each unit stepped as its gradients
// arrive; fp32 compute with an fp32 master, so the master itself is gathered (fp32 send slots,
// no 16-bit copies).
TEST(MemoryEstimate, OptimizerInBackwardFp32) {
  TempDir dir("oib_fp32");
  recipe::RunConfig c = base_config(dir.path);
  c.train.optimizer_in_backward = true;
  c.train.precision = recipe::Precision::kFp32;
  c.train.max_grad_norm = 0.0;
  c.train.nonfinite = recipe::Nonfinite::kFail;
  c.optimizer.state = optim::StateFormat::kF32;
  c.optimizer.master = optim::MasterMode::kF32;
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), 1);
  EXPECT_EQ(e.grad_sum, 0);
  EXPECT_EQ(e.nominal.grads, 0.0);
  expect_within_10_percent(c, models::preset_config("stories260k"), "optimizer in backward, fp32, f32 state");
}

// ZeRO-2 with fp32 compute from an fp32 master: over several ranks the store keeps the master
// gathered whole for the compute beside the bf16 weights, and reduce-scatters the gradients.
TEST(MemoryEstimate, ZeroStage2Fp32ComputeFromMaster) {
  TempDir dir("zero2_master");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 2;
  set_numerics(c, recipe::Precision::kFp32, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), world().world_size(), world().rank());
  EXPECT_EQ(e.master_copy > 0, world().world_size() > 1);
  expect_within_10_percent(c, models::preset_config("stories260k"), "zero2, fp32 compute from the f32 master");
}

// Gradient reductions left in flight during backward (distributed.reduce_bucket_mib): over
// several ranks each finished unit's accumulator, received block and the communicator's
// temporaries stay beside the next units' backward until those in flight exceed the bucket, and
// the last ones until backward ends. About two of this model's blocks fit in 1 MiB at stage 2,
// so some reductions finish during backward and some at its end. At world 1 nothing is in flight.
TEST(MemoryEstimate, ReductionsInFlightStage2) {
  TempDir dir("inflight_zero2");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 2;
  c.train.precision = recipe::Precision::kBf16;
  c.train.grad_accum = 2;
  c.optimizer.state = optim::StateFormat::kBlock8;
  c.optimizer.master = optim::MasterMode::kF32;
  const models::ModelConfig model = models::preset_config("stories260k");
  const MemoryEstimate waited = estimate_memory(c, model, world().world_size(), world().rank());
  c.distributed.reduce_bucket_mib = 1.0;
  const MemoryEstimate in_flight = estimate_memory(c, model, world().world_size(), world().rank());
  if (world().world_size() > 1) {
    EXPECT_GT(in_flight.bytes(MemoryCategory::kGrads), waited.bytes(MemoryCategory::kGrads))
        << "the accumulators of the units still reducing are held together";
  } else {
    EXPECT_EQ(in_flight.step_peak_bytes, waited.step_peak_bytes);
  }
  expect_within_10_percent(c, model, "zero2, bf16, grad_accum 2, 1 MiB of reductions in flight");
}

// The same with the optimizer step fused into backward at stage 1 (in-place all-reduces, each
// unit stepped when its reduction is finished) and at stage 3 (gathers prefetched behind them).
TEST(MemoryEstimate, ReductionsInFlightFusedStage1) {
  TempDir dir("inflight_fused1");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 1;
  c.distributed.reduce_bucket_mib = 1.5;
  c.train.optimizer_in_backward = true;
  c.train.max_grad_norm = 0.0;
  c.train.nonfinite = recipe::Nonfinite::kFail;
  set_numerics(c, recipe::Precision::kBf16, optim::StateFormat::kBlock8, optim::MasterMode::kNone);
  c.optimizer.weight_rounding = optim::WeightRounding::kStochastic;
  expect_within_10_percent(c, models::preset_config("stories260k"), "zero1 fused, 1.5 MiB of reductions in flight");
}

TEST(MemoryEstimate, ReductionsInFlightStage3) {
  TempDir dir("inflight_zero3");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 3;
  c.distributed.reduce_bucket_mib = 1.0;
  set_numerics(c, recipe::Precision::kFp32, optim::StateFormat::kBlock8, optim::MasterMode::kF32);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  expect_within_10_percent(c, models::preset_config("stories260k"), "zero3, fp32 from the master, 1 MiB in flight");
}

// ZeRO-3 from a file with an untied head (the head unit holds lm_head: its gradients start at the
// loss, the embedding's only at the end), fp32 compute from bf16 weights (bf16 gathers widened),
// and the loading peak: one unit of the mapped file at a time.
TEST(MemoryEstimate, ZeroStage3UntiedLlamaFromSafetensors) {
  TempDir dir("zero3_untied");
  models::ModelConfig llama = models::preset_config("stories260k");
  llama.name = "tiny-llama-untied";
  llama.n_layers = 3;
  llama.tied_embeddings = false;
  write_random_safetensors(llama, dir.path / "model", 5);

  recipe::RunConfig c = base_config(dir.path);
  c.model.preset = "";
  c.model.path = (dir.path / "model").string();
  c.distributed.zero_stage = 3;
  set_numerics(c, recipe::Precision::kFp32, optim::StateFormat::kBf16, optim::MasterMode::kRemainder16);
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  expect_within_10_percent(c, llama, "zero3 untied llama from safetensors, fp32 compute, remainder16 master");
}

// ZeRO over more ranks: the optimizer state and master shrink to about 1/world, the model's
// buffers do not, and the MPI communicator's temporaries appear.
TEST(MemoryEstimate, ShardsOptimizerStateOverRanks) {
  TempDir dir("world");
  const recipe::RunConfig c = base_config(dir.path);
  const models::ModelConfig model = models::preset_config("stories260k");
  const MemoryEstimate one = estimate_memory(c, model, 1);
  const MemoryEstimate four = estimate_memory(c, model, 4);
  EXPECT_EQ(one.bytes(MemoryCategory::kCommBuffers), 0);
  EXPECT_GT(four.bytes(MemoryCategory::kCommBuffers), 0);
  // Stage 1 keeps the whole bf16 weights on every rank; the units in use grow only by their
  // padding to a multiple of 256 * world (fp32, at most three units at once).
  EXPECT_EQ(four.trainer_weights, one.trainer_weights);
  EXPECT_GE(four.unit_weights, one.unit_weights);
  EXPECT_LT(four.unit_weights, one.unit_weights + 3 * 4 * 256 * 4);
  EXPECT_EQ(four.bytes(MemoryCategory::kActivations), one.bytes(MemoryCategory::kActivations));
  EXPECT_LT(four.optimizer.master, one.optimizer.master / 4 * 2);
  EXPECT_GE(four.optimizer.master * 4, one.optimizer.master);
  EXPECT_LT(four.optimizer.state(), one.optimizer.state() / 4 * 2);
}

TEST(MemoryEstimate, BudgetRefusesAnOverBudgetPlan) {
  TempDir dir("budget");
  const recipe::RunConfig c = base_config(dir.path);
  const MemoryEstimate e = estimate_memory(c, models::preset_config("stories260k"), 1);
  const BudgetCheck over = check_budget(e, e.peak_bytes - 1);
  EXPECT_FALSE(over.fits);
  EXPECT_NE(over.message.find("over budget"), std::string::npos) << over.message;
  EXPECT_NE(over.message.find("exceeds"), std::string::npos) << over.message;
  const BudgetCheck exact = check_budget(e, e.peak_bytes);
  EXPECT_TRUE(exact.fits) << exact.message;
  // A 7B model's model state alone is far past 1 GiB.
  const MemoryEstimate big = estimate_memory(c, models::preset_config("qwen2.5-7b"), 8);
  EXPECT_FALSE(check_budget(big, int64_t(1) << 30).fits);
  // The first weights are set up one unit at a time, from the mapped model.path or from a preset,
  // so building a ZeRO-3 trainer holds less than its step: no whole fp32 copy on any rank.
  recipe::RunConfig z3 = c;
  z3.distributed.zero_stage = 3;
  z3.model.preset = "";
  z3.model.path = "model.safetensors";  // the estimate reads no file
  const MemoryEstimate from_file = estimate_memory(z3, models::preset_config("qwen2.5-7b"), 8);
  EXPECT_LT(from_file.load_peak_bytes, from_file.step_peak_bytes);
  EXPECT_EQ(from_file.peak_bytes, from_file.step_peak_bytes);
  EXPECT_LT(from_file.initial_weights, from_file.flat_elems);  // one unit's fp32, not the model's
  z3.model.path = "";
  z3.model.preset = "qwen2.5-7b";
  const MemoryEstimate preset = estimate_memory(z3, models::preset_config("qwen2.5-7b"), 8);
  EXPECT_EQ(preset.load_peak_bytes, from_file.load_peak_bytes);
}

// ZeRO-3 over more ranks: the owned shards (bf16 weights, gradient sums, master, moments) shrink
// to about 1/world; the gathered units and activations do not.
TEST(MemoryEstimate, ZeroStage3ShardsWeightsOverRanks) {
  TempDir dir("zero3_world");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 3;
  c.train.precision = recipe::Precision::kBf16;
  const models::ModelConfig model = models::preset_config("smollm2-135m");
  c.data.seq_len = 256;
  const MemoryEstimate one = estimate_memory(c, model, 1);
  const MemoryEstimate eight = estimate_memory(c, model, 8);
  EXPECT_LT(eight.trainer_weights, one.trainer_weights / 8 * 2);
  EXPECT_GE(eight.trainer_weights * 8, one.trainer_weights);
  // One rank keeps one backward's gradient in bf16; eight keep fp32 sums of their owned shards.
  EXPECT_EQ(one.grad_bytes_per_elem, 2);
  EXPECT_EQ(eight.grad_bytes_per_elem, 4);
  EXPECT_LT(eight.grad_sum / 4, one.grad_sum / 2 / 8 * 2);
  EXPECT_GE(eight.grad_sum / 4 * 8, one.grad_sum / 2);
  EXPECT_LT(eight.optimizer.state(), one.optimizer.state() / 8 * 2);
  EXPECT_EQ(eight.bytes(MemoryCategory::kActivations), one.bytes(MemoryCategory::kActivations));
  // Each gathered unit is padded to a multiple of 256 * world, so it can only grow.
  EXPECT_GE(eight.unit_weights, one.unit_weights);
  EXPECT_LT(eight.unit_weights, one.unit_weights + 2 * 8 * 256 * 6);
  EXPECT_GT(eight.bytes(MemoryCategory::kCommBuffers), 0);
  EXPECT_EQ(eight.comm_staging, 0);
  EXPECT_LT(eight.step_peak_bytes, one.step_peak_bytes);
  // Stage 2 keeps whole weights on every rank, stage 1 whole gradients too: each holds more.
  c.distributed.zero_stage = 2;
  const MemoryEstimate two = estimate_memory(c, model, 8);
  EXPECT_LT(eight.step_peak_bytes, two.step_peak_bytes);
  EXPECT_EQ(two.trainer_weights, one.trainer_weights);
  EXPECT_EQ(two.grad_sum, eight.grad_sum);
  c.distributed.zero_stage = 1;
  const MemoryEstimate stage1 = estimate_memory(c, model, 8);
  EXPECT_LT(two.step_peak_bytes, stage1.step_peak_bytes);
  EXPECT_EQ(stage1.grad_sum, stage1.flat_elems * 4);  // whole, and fp32: summed over 8 ranks
}

TEST(MemoryEstimate, RefusesWhatCannotBeBuilt) {
  TempDir dir("refuse");
  recipe::RunConfig c = base_config(dir.path);
  c.data.seq_len = 4096;
  EXPECT_THROW(estimate_memory(c, models::preset_config("stories260k"), 1), Error);
}

}  // namespace
}  // namespace farthing::train

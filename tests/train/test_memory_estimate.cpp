// test_memory_estimate.cpp — `farthing plan`'s arithmetic (framework/train/memory_estimate.h)
// against real training: for several configurations the real Trainer (world size 1) takes two
// steps and the memory tracker's peak is compared with the prediction, in total and per
// category; and the budget check refuses a plan that does not fit.
// Data is a token file of random ids, so neither a tokenizer nor ../shared is needed.
#include <gtest/gtest.h>

#include <unistd.h>

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
#include "framework/train/memory_estimate.h"
#include "framework/train/trainer.h"
#include "models/common/presets.h"

namespace farthing::train {
namespace {

namespace fs = std::filesystem;

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// A fresh temporary directory per test, removed afterwards.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("farthing_memest_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

constexpr int64_t kVocab = 512;  // stories260k's

fs::path write_random_tokens(const fs::path& dir) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, int32_t(kVocab) - 1);
  std::vector<int32_t> ids(40000);
  for (int32_t& x : ids) x = id(rng);
  const fs::path path = dir / "train.tok";
  data::write_token_file(path, ids, uint32_t(kVocab));
  return path;
}

recipe::RunConfig base_config(const fs::path& dir) {
  recipe::RunConfig c;
  c.model.preset = "stories260k";
  c.data.train = write_random_tokens(dir).string();
  c.data.format = "tokens";
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

struct Measured {
  int64_t peak = 0;
  std::array<int64_t, kNumMemoryCategories> category_peaks{};
};

// Builds the real Trainer and trains; the tracker's peak over the training steps, less what
// was held before the trainer existed.
Measured train_and_measure(const recipe::RunConfig& config) {
  MemoryTracker& tracker = memory_tracker(Device::cpu());
  const MemorySnapshot before = tracker.snapshot();
  Measured m;
  {
    Trainer trainer(config, world(), TrainerOutput{.progress = false});
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

void expect_within_10_percent(const recipe::RunConfig& config, const models::ModelConfig& model, const char* label) {
  const MemoryEstimate e = estimate_memory(config, model, 1);
  const Measured m = train_and_measure(config);
  std::printf("[%s] predicted peak %lld B (%s), measured peak %lld B (%s), ratio %.4f\n", label,
              (long long)e.step_peak_bytes, format_bytes(e.step_peak_bytes).c_str(), (long long)m.peak,
              format_bytes(m.peak).c_str(), double(e.step_peak_bytes) / double(m.peak));
  // The contract `farthing plan` promises (issue 6): the predicted peak within 10% of the measured one.
  EXPECT_NEAR(double(e.step_peak_bytes), double(m.peak), 0.10 * double(m.peak)) << label;
  // At world size 1 every tracked allocation is persistent and the estimate repeats each one,
  // so it is exact, category by category: any difference means memory_estimate.cpp no longer
  // mirrors a constructor it copies (transformer.cpp, adamw.cpp, trainer.cpp).
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    const auto category = MemoryCategory(c);
    EXPECT_EQ(e.bytes(category), m.category_peaks[size_t(c)])
        << label << ": " << memory_category_name(category) << " drifted from what the trainer allocates";
  }
}

TEST(MemoryEstimate, Bf16Compute8BitStateF32Master) {
  TempDir dir("bf16_8bit");
  recipe::RunConfig c = base_config(dir.path);
  c.train.precision = "bf16";
  c.optimizer.state = "8bit";
  c.optimizer.master = "f32";
  c.optimizer.embedding_f32_state = false;  // let the 8-bit segments include the big embedding
  expect_within_10_percent(c, models::preset_config("stories260k"), "bf16, 8bit state, f32 master");
}

TEST(MemoryEstimate, Fp32ComputeF32StateGradAccum) {
  TempDir dir("fp32_accum");
  recipe::RunConfig c = base_config(dir.path);
  c.train.precision = "fp32";
  c.optimizer.state = "f32";
  c.optimizer.master = "f32";
  c.optimizer.weight_rounding = "nearest";
  c.train.grad_accum = 2;
  expect_within_10_percent(c, models::preset_config("stories260k"), "fp32, f32 state, grad_accum 2");
}

TEST(MemoryEstimate, Bf16PerBlockCheckpointingNoMasterAccum) {
  TempDir dir("bf16_ckpt");
  recipe::RunConfig c = base_config(dir.path);
  c.train.precision = "bf16";
  c.optimizer.state = "8bit";
  c.optimizer.master = "none";
  c.optimizer.weight_rounding = "stochastic";
  c.model.activation_checkpointing = "per_block";
  c.train.grad_accum = 3;
  c.train.micro_batch = 8;
  expect_within_10_percent(c, models::preset_config("stories260k"), "bf16, 8bit state, no master, per_block, accum 3");
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
  ckpt::ModelFile file;
  file.format = "safetensors";
  file.config = nlohmann::json::parse(models::config_to_hf_json(gpt2));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const models::TransformerSpec spec = models::make_spec(gpt2);
  for (const models::ParamEntry& entry : spec.layout.entries()) {
    ckpt::ModelTensor t = ckpt::make_model_tensor(entry.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
    file.tensors.emplace(entry.name, std::move(t));
  }
  ckpt::write_safetensors(dir.path / "model", file);
  file.tensors.clear();

  recipe::RunConfig c = base_config(dir.path);
  c.model.preset = "";
  c.model.path = (dir.path / "model").string();
  c.train.precision = "bf16";
  c.optimizer.state = "bf16";
  c.optimizer.master = "remainder16";
  c.optimizer.weight_rounding = "nearest";
  const MemoryEstimate e = estimate_memory(c, gpt2, 1);
  EXPECT_GT(e.load_peak_bytes, 0);
  expect_within_10_percent(c, gpt2, "gpt2 from safetensors, bf16 state, remainder16 master");
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
  EXPECT_EQ(four.bytes(MemoryCategory::kWeights), one.bytes(MemoryCategory::kWeights));
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
}

TEST(MemoryEstimate, RefusesWhatItCannotEstimate) {
  TempDir dir("refuse");
  recipe::RunConfig c = base_config(dir.path);
  c.distributed.zero_stage = 3;
  EXPECT_THROW(estimate_memory(c, models::preset_config("stories260k"), 2), Error);
  c.distributed.zero_stage = 1;
  c.train.optimizer_in_backward = true;
  EXPECT_THROW(estimate_memory(c, models::preset_config("stories260k"), 1), Error);
  c.train.optimizer_in_backward = false;
  c.data.seq_len = 4096;
  EXPECT_THROW(estimate_memory(c, models::preset_config("stories260k"), 1), Error);
}

}  // namespace
}  // namespace farthing::train

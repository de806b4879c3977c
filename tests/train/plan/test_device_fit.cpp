// test_device_fit.cpp — the settings that fit a device (train/plan/device_fit.h):
//   - model.loss_chunk_rows 0 (auto) becomes the largest chunk whose planned peak fits the budget:
//     the whole micro-batch when it fits, a power of two when only that fits, 64 when nothing does;
//   - farthing plan --fit keeps the recipe's batch per rank, picks no recomputation where it fits,
//     recomputation where only that fits, nothing where nothing fits, and among paper ties the
//     largest micro-batch;
//   - the Trainer refuses auto without a resolver, and records the resolved rows.
// Relies on: train/plan/device_fit.h, train/plan/memory_estimate.h, train/loop/trainer.h,
// tests/train/loop/trainer_test_support.h.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/common/presets.h"
#include "train/loop/trainer.h"
#include "train/plan/device_fit.h"
#include "train/plan/memory_estimate.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

// The 8B single-device recipe's settings (recipes/llama3_1/8b_full_single_device.yaml), on the preset.
recipe::RunConfig llama_8b_recipe() {
  recipe::RunConfig c;
  c.model.preset = "llama3.1-8b";
  c.model.activation_checkpointing = models::Checkpointing::kPerBlock;
  c.data.seq_len = 2048;
  c.train.micro_batch = 2;
  c.train.grad_accum = 16;
  c.optimizer.state = optim::StateFormat::kBlock8;
  c.optimizer.master = optim::MasterMode::kNone;
  c.optimizer.weight_rounding = optim::WeightRounding::kStochastic;
  return c;
}

int64_t peak_with_chunk(recipe::RunConfig c, int64_t rows, int world_size) {
  c.model.loss_chunk_rows = rows;
  return estimate_memory(c, models::preset_config(c.model.preset), world_size).peak_bytes;
}

// Over two ranks every unit keeps an fp32 gradient accumulator (the reduction reads each
// micro-batch's own), so a larger chunk only adds logits rows: the peak grows with the chunk.
TEST(DeviceFit, AutoLossChunkIsTheLargestWhosePeakFits) {
  const recipe::RunConfig c = llama_8b_recipe();
  const models::ModelConfig model = models::preset_config(c.model.preset);
  constexpr int kRanks = 2;
  const int64_t whole = c.train.micro_batch * c.data.seq_len;  // 4096 rows
  const int64_t p_whole = peak_with_chunk(c, whole, kRanks), p_2048 = peak_with_chunk(c, 2048, kRanks);
  const int64_t p_1024 = peak_with_chunk(c, 1024, kRanks), p_64 = peak_with_chunk(c, 64, kRanks);
  ASSERT_GT(p_whole, p_2048);  // more logits rows alive, more memory
  ASSERT_GT(p_2048, p_1024);
  EXPECT_EQ(fit_loss_chunk_rows(c, model, kRanks, p_whole), whole);
  EXPECT_EQ(fit_loss_chunk_rows(c, model, kRanks, p_whole - 1), 2048);
  EXPECT_EQ(fit_loss_chunk_rows(c, model, kRanks, p_1024), 1024);
  EXPECT_EQ(fit_loss_chunk_rows(c, model, kRanks, p_64 - 1), 64) << "nothing fits: the smallest, and the plan says so";
}

// On one rank with fp32 kept gradients, a head whose loss runs in one chunk adds its gradient in
// place, while a chunked head keeps an fp32 accumulator (docs/parameter_store.md, "Gradients in
// place"): at 8B that accumulator outweighs the whole micro-batch's logits, so the whole is the
// smallest peak of all, and the largest chunk that fits is the whole wherever any fits.
TEST(DeviceFit, OneRankWholeHeadIsInPlaceAndSmallest) {
  const recipe::RunConfig c = llama_8b_recipe();
  const models::ModelConfig model = models::preset_config(c.model.preset);
  const int64_t whole = c.train.micro_batch * c.data.seq_len;
  const int64_t p_whole = peak_with_chunk(c, whole, 1);
  for (const int64_t rows : {2048, 1024, 64}) EXPECT_LT(p_whole, peak_with_chunk(c, rows, 1)) << rows << " rows";
  EXPECT_EQ(fit_loss_chunk_rows(c, model, 1, peak_with_chunk(c, 64, 1)), whole);
}

TEST(DeviceFit, KeepsTheBatchAndDropsRecomputationWhereItFits) {
  const recipe::RunConfig c = llama_8b_recipe();
  const models::ModelConfig model = models::preset_config(c.model.preset);
  const RooflineDevice& h200 = *roofline_device("h200");
  const FitResult roomy = fit_to_device(c, model, 1, int64_t(1) << 50, h200);
  ASSERT_TRUE(roomy.chosen.has_value());
  for (const FitCandidate& t : roomy.tried) {
    EXPECT_EQ(t.micro_batch * t.grad_accum, 32) << "the batch per rank is the recipe's";
    EXPECT_TRUE(t.fits);
  }
  const FitCandidate& best = roomy.tried[*roomy.chosen];
  EXPECT_EQ(best.checkpointing, models::Checkpointing::kNone);  // a quarter less compute on paper
  EXPECT_EQ(best.micro_batch, 32) << "among paper ties, the largest micro-batch";
  EXPECT_EQ(best.loss_chunk_rows, 32 * 2048);

  // A budget that only recomputation fits at micro-batch 1: the smallest no-recompute peak, less one.
  int64_t smallest_none = INT64_MAX;
  for (const FitCandidate& t : roomy.tried) {
    if (t.checkpointing == models::Checkpointing::kNone) smallest_none = std::min(smallest_none, t.peak_bytes);
  }
  const FitResult tight = fit_to_device(c, model, 1, smallest_none - 1, h200);
  ASSERT_TRUE(tight.chosen.has_value());
  EXPECT_EQ(tight.tried[*tight.chosen].checkpointing, models::Checkpointing::kPerBlock);
  EXPECT_LE(tight.tried[*tight.chosen].peak_bytes, smallest_none - 1);

  const FitResult none = fit_to_device(c, model, 1, int64_t(1) << 30, h200);  // 1 GiB: not the weights
  EXPECT_FALSE(none.chosen.has_value());
  const std::string table = fit_table(c, model, 1, *fit_device("h200"), none);
  EXPECT_NE(table.find("Nothing fits"), std::string::npos) << table;
}

TEST(DeviceFit, TheTrainerResolvesAutoThroughItsCaller) {
  testing::TempDir dir("device_fit_auto");
  recipe::RunConfig c = testing::tiny_token_run(dir.path, 1);
  c.model.loss_chunk_rows = 0;
  EXPECT_THROW(Trainer(c, testing::world(), TrainerOutput{.progress = false}), Error);
  TrainerOutput output{.progress = false};
  int64_t asked = 0;
  output.auto_loss_chunk_rows = [&](const recipe::RunConfig& config, const models::ModelConfig& model) {
    ++asked;
    EXPECT_EQ(model.name, "stories260K");
    EXPECT_EQ(config.model.loss_chunk_rows, 0);
    return int64_t(16);
  };
  Trainer trainer(c, testing::world(), output);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(trainer.config().model.loss_chunk_rows, 16);
  trainer.train_step();
}

}  // namespace
}  // namespace farthing::train

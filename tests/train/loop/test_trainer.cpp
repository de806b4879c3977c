// test_trainer.cpp — the Trainer itself (train/loop/trainer.h) on a random-init preset
// (stories260k) over a token file of random ids, world size 1, no ../shared needed:
//  - one step: the first loss is that of a near-uniform model (ln vocab), every target counted,
//    the weights move and the step is counted;
//  - accumulation: 2 micro-batches of 2 sequences give the same step as 1 of 4 (the same
//    sequences, the loss normalised over the global batch);
//  - clipping: the first step's first moment with max_grad_norm = norm / 4 is the unclipped one
//    times exactly that factor (m1 = (1 - beta1) * clip * g), and the reported norm is the
//    unclipped one;
//  - a non-finite step (fp16 with a loss scale that overflows) is skipped: counted, moments left
//    at zero, the scale backed off, and the next step taken;
//  - save and load: a Trainer that loads another's checkpoint evaluates bit for bit alike and
//    holds the same optimizer state;
//  - the recipe's collective timeout and reduce order reach the communicator;
//  - 8-bit moments: the checkpoint's optim group names the dynamic map and holds its values; a
//    checkpoint without them (written before they existed) loads, one naming another map does not;
//  - precision fp32 keeps one backward's gradient in fp32 (train.grad_dtype auto), bf16 on request.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "framework/ckpt/h5_checkpoint_reader.h"
#include "train/loop/train_checkpoint.h"
#include "train/loop/trainer.h"
#include "kernels/numerics/dynamic_map.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 512;  // stories260k's

using testing::world;
struct TempDir : testing::TempDir {
  explicit TempDir(const std::string& name) : testing::TempDir("trainer_" + name) {}
};

recipe::RunConfig base_config(const fs::path& dir) {
  recipe::RunConfig c;
  c.model.preset = "stories260k";
  c.data.train = testing::write_random_tokens(dir, kVocab, 20000, 11).string();
  c.data.format = recipe::DataFormat::kTokens;
  c.data.seq_len = 32;
  c.data.eval_fraction = 0.05;
  c.train.steps = 4;
  c.train.micro_batch = 4;
  c.train.eval_batches = 2;
  c.train.log_every = 0;
  c.schedule.warmup_steps = 0;
  c.optimizer.lr = 1e-3;
  c.checkpoint.run_dir = (dir / "run").string();
  return c;
}

// The first moment of every shard, as fp32.
std::vector<float> first_moments(const optim::AdamW& adamw) {
  std::vector<float> all;
  for (size_t s = 0; s < adamw.shards().size(); ++s) {
    const size_t n = size_t(adamw.shards()[s].numel);
    std::vector<float> m(n), v(n);
    adamw.moments_to_f32(s, m.data(), v.data());
    all.insert(all.end(), m.begin(), m.end());
  }
  return all;
}

TEST(Trainer, OneStepFromRandomInit) {
  TempDir dir("one_step");
  const recipe::RunConfig config = base_config(dir.path);
  Trainer trainer(config, world(), TrainerOutput{.progress = false});
  const Trainer::StepOutcome out = trainer.train_step();
  // A random init with small weights predicts a near-uniform distribution over the vocabulary.
  EXPECT_NEAR(out.loss, std::log(double(kVocab)), 0.05);
  EXPECT_EQ(out.tokens, config.train.micro_batch * config.data.seq_len);
  EXPECT_TRUE(std::isfinite(out.grad_norm));
  EXPECT_GT(out.grad_norm, 0.0);
  EXPECT_FALSE(out.skipped);
  EXPECT_LT(out.unchanged_fraction, 0.5) << "an lr 1e-3 step should move most bf16 weights";
  EXPECT_EQ(trainer.progress().step, 1);
  EXPECT_EQ(trainer.progress().tokens_seen, out.tokens);
}

// distributed.collective_timeout_s and distributed.reduce reach the communicator the trainer was
// given (the bound itself is tested by tests/dist/test_fault.sh's hang mode, native sums by
// tests/dist/test_collectives.cpp).
TEST(Trainer, SetsTheCommunicatorFromTheRecipe) {
  TempDir dir("communicator");
  recipe::RunConfig config = base_config(dir.path);
  config.distributed.collective_timeout_s = 123.5;
  config.distributed.reduce = ReduceOrder::kNative;
  {
    Trainer trainer(config, world(), TrainerOutput{.progress = false});
    EXPECT_EQ(world().collective_timeout(), 123.5);
    EXPECT_EQ(world().reduce_order(), ReduceOrder::kNative);
  }
  config.distributed.collective_timeout_s = 0.0;  // and back, for the other tests
  config.distributed.reduce = ReduceOrder::kOrdered;
  Trainer trainer(config, world(), TrainerOutput{.progress = false});
  EXPECT_EQ(world().collective_timeout(), 0.0);
  EXPECT_EQ(world().reduce_order(), ReduceOrder::kOrdered);
}

TEST(Trainer, AccumulatedMicroBatchesMatchOneBigOne) {
  TempDir dir("accumulate");
  recipe::RunConfig whole = base_config(dir.path);
  whole.optimizer.state = optim::StateFormat::kF32;
  recipe::RunConfig split = whole;
  split.train.micro_batch = 2;
  split.train.grad_accum = 2;
  split.checkpoint.run_dir = (dir.path / "run_split").string();
  Trainer a(whole, world(), TrainerOutput{.progress = false});
  Trainer b(split, world(), TrainerOutput{.progress = false});
  for (int step = 0; step < 2; ++step) {
    const Trainer::StepOutcome x = a.train_step(), y = b.train_step();
    // The same four sequences; only the GEMMs' batch shapes and the sums' association differ.
    EXPECT_NEAR(x.loss, y.loss, 1e-5 * x.loss) << "step " << step;
    EXPECT_NEAR(x.grad_norm, y.grad_norm, 1e-3 * x.grad_norm) << "step " << step;
    EXPECT_EQ(x.tokens, y.tokens);
  }
  EXPECT_EQ(a.progress().data_position, b.progress().data_position);
}

TEST(Trainer, ClippingScalesTheGradientByMaxNormOverNorm) {
  TempDir dir("clip");
  recipe::RunConfig free = base_config(dir.path);
  free.optimizer.state = optim::StateFormat::kF32;
  free.optimizer.embedding_f32_state = true;
  free.train.max_grad_norm = 0.0;
  Trainer unclipped(free, world(), TrainerOutput{.progress = false});
  const Trainer::StepOutcome u = unclipped.train_step();
  const std::vector<float> m_free = first_moments(unclipped.optimizer());

  recipe::RunConfig clip = free;
  clip.train.max_grad_norm = u.grad_norm / 4;
  clip.checkpoint.run_dir = (dir.path / "run_clip").string();
  Trainer clipped(clip, world(), TrainerOutput{.progress = false});
  const Trainer::StepOutcome c = clipped.train_step();
  const std::vector<float> m_clip = first_moments(clipped.optimizer());

  EXPECT_EQ(c.grad_norm, u.grad_norm) << "the reported norm is the one before clipping";
  ASSERT_EQ(m_free.size(), m_clip.size());
  const double factor = clip.train.max_grad_norm / u.grad_norm;  // 1/4, up to the norm's rounding
  int64_t checked = 0;
  for (size_t i = 0; i < m_free.size(); ++i) {
    if (m_free[i] == 0.0f) continue;
    ASSERT_NEAR(m_clip[i], factor * m_free[i], 1e-5 * std::fabs(m_free[i])) << "element " << i;
    ++checked;
  }
  EXPECT_GT(checked, int64_t(m_free.size() / 2));
}

TEST(Trainer, NonFiniteStepIsSkippedAndTheScaleBacksOff) {
  TempDir dir("nonfinite");
  recipe::RunConfig config = base_config(dir.path);
  config.train.precision = recipe::Precision::kFp16;
  config.optimizer.state = optim::StateFormat::kF32;
  config.loss_scale.initial = 1e30;  // the scaled loss gradient overflows fp16 at once
  Trainer trainer(config, world(), TrainerOutput{.progress = false});
  const Trainer::StepOutcome first = trainer.train_step();
  EXPECT_TRUE(first.skipped);
  EXPECT_EQ(first.unchanged_fraction, 1.0) << "a skipped step leaves every weight unchanged";
  EXPECT_EQ(trainer.progress().skipped_steps, 1);
  EXPECT_LT(trainer.progress().loss_scale, 1e30);
  for (float m : first_moments(trainer.optimizer())) ASSERT_EQ(m, 0.0f) << "a skipped step left moments";
  // The scale keeps backing off until a step goes through.
  int64_t steps = 1;
  while (trainer.train_step().skipped && steps < 200) ++steps;
  EXPECT_LT(steps, 200) << "no step was ever taken";
  EXPECT_EQ(trainer.progress().skipped_steps, steps);
}

TEST(Trainer, ALoadedCheckpointEvaluatesAndStepsAlike) {
  TempDir dir("save_load");
  const recipe::RunConfig config = base_config(dir.path);
  Trainer first(config, world(), TrainerOutput{.progress = false});
  const TrainResult trained = first.train("", 2);
  ASSERT_TRUE(fs::exists(trained.last_checkpoint));
  const EvalResult before = first.evaluate(0);

  Trainer second(config, world(), TrainerOutput{.progress = false});
  second.load_checkpoint(trained.last_checkpoint);
  const EvalResult after = second.evaluate(0);
  EXPECT_EQ(after.loss, before.loss) << "bit for bit";
  EXPECT_EQ(after.tokens, before.tokens);
  EXPECT_EQ(second.progress().step, 2);
  EXPECT_EQ(second.progress().data_position, first.progress().data_position);
  EXPECT_EQ(first_moments(second.optimizer()), first_moments(first.optimizer()));
  // And the next step is the same step.
  EXPECT_EQ(second.train_step().loss, first.train_step().loss);
}

// A copy of `from` whose optim group's map attributes are removed (a checkpoint written before
// they existed), or whose map name is replaced by `name`.
fs::path edited_checkpoint(const fs::path& from, const fs::path& to, const char* name) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  const hid_t file = H5Fopen(to.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hid_t group = H5Gopen2(file, kOptimGroup, H5P_DEFAULT);
  EXPECT_GE(group, 0);
  if (name == nullptr) {
    for (const char* a : {kDynamicMapAttribute, kDynamicMapSignedAttribute, kDynamicMapUnsignedAttribute}) {
      EXPECT_GE(H5Adelete(group, a), 0) << a;
    }
  } else {
    EXPECT_GE(H5Adelete(group, kDynamicMapAttribute), 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, std::strlen(name));
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(group, kDynamicMapAttribute, type, space, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(H5Awrite(attr, type, name), 0);
    H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Gclose(group);
  H5Fclose(file);
  return to;
}

TEST(Trainer, EightBitCheckpointsNameTheirDynamicMap) {
  TempDir dir("dynamic_map");
  recipe::RunConfig config = base_config(dir.path);
  config.optimizer.state = optim::StateFormat::kBlock8;
  const fs::path saved = Trainer(config, world(), TrainerOutput{.progress = false}).train("", 2).last_checkpoint;
  ASSERT_TRUE(fs::exists(saved));
  {
    const H5CheckpointReader reader(saved);
    ASSERT_TRUE(reader.has_group_attribute(kOptimGroup, kDynamicMapAttribute));
    EXPECT_EQ(reader.group_attribute_string(kOptimGroup, kDynamicMapAttribute), "bitsandbytes-dynamic-torch1.13");
    // The values are the torch 1.13 maps bit for bit (the torch 2.x ones differ in 42 and 43 entries).
    for (const auto& [attribute, sign] : {std::pair{kDynamicMapSignedAttribute, numerics::MapSign::kSigned},
                                          std::pair{kDynamicMapUnsignedAttribute, numerics::MapSign::kUnsigned}}) {
      const std::vector<float> stored = reader.group_attribute_f32_array(kOptimGroup, attribute);
      const numerics::DynamicMap old_map = numerics::make_dynamic_map(sign, numerics::MapLinspace::kTorch1_13);
      const numerics::DynamicMap new_map = numerics::make_dynamic_map(sign, numerics::MapLinspace::kTorch2);
      ASSERT_EQ(stored.size(), 256u) << attribute;
      EXPECT_EQ(std::memcmp(stored.data(), old_map.data(), sizeof old_map), 0) << attribute;
      EXPECT_NE(std::memcmp(stored.data(), new_map.data(), sizeof new_map), 0) << attribute;
    }
  }
  Trainer reference(config, world(), TrainerOutput{.progress = false});
  reference.load_checkpoint(saved);
  const double loss = reference.evaluate(0).loss;
  // Written before checkpoints named their map: it loads, and means the torch 1.13 map.
  Trainer old_reader(config, world(), TrainerOutput{.progress = false});
  old_reader.load_checkpoint(edited_checkpoint(saved, dir.path / "old.h5", nullptr));
  EXPECT_EQ(old_reader.evaluate(0).loss, loss);
  EXPECT_EQ(first_moments(old_reader.optimizer()), first_moments(reference.optimizer()));
  // Coded with another map: refused, naming it.
  Trainer foreign(config, world(), TrainerOutput{.progress = false});
  try {
    foreign.load_checkpoint(edited_checkpoint(saved, dir.path / "foreign.h5", "bitsandbytes-dynamic-torch2"));
    ADD_FAILURE() << "a checkpoint coded with another map loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bitsandbytes-dynamic-torch2'"), std::string::npos) << e.what();
  }
  // No 8-bit moments, no map.
  TempDir f32_dir("dynamic_map_f32");
  recipe::RunConfig f32 = base_config(f32_dir.path);
  f32.optimizer.state = optim::StateFormat::kF32;
  const fs::path f32_saved = Trainer(f32, world(), TrainerOutput{.progress = false}).train("", 1).last_checkpoint;
  EXPECT_FALSE(H5CheckpointReader(f32_saved).has_group_attribute(kOptimGroup, kDynamicMapAttribute));
}

// train.grad_dtype: auto keeps one backward's gradient in fp32 under precision fp32, in bf16
// under bf16 compute; bf16 and fp32 when asked. Sums are fp32 regardless.
TEST(Trainer, GradDtypeChoosesHowOneBackwardsGradientIsKept) {
  TempDir dir("grad_dtype");
  struct Case {
    recipe::Precision precision;
    recipe::GradDtype grad_dtype;
    int64_t grad_accum;
    DType kept;
  };
  using P = recipe::Precision;
  using G = recipe::GradDtype;
  for (const Case& c : {Case{P::kFp32, G::kAuto, 1, DType::kF32}, Case{P::kBf16, G::kAuto, 1, DType::kBF16},
                        Case{P::kFp32, G::kBf16, 1, DType::kBF16}, Case{P::kBf16, G::kFp32, 1, DType::kF32},
                        Case{P::kBf16, G::kBf16, 2, DType::kF32}}) {
    recipe::RunConfig config = base_config(dir.path);
    config.train.precision = c.precision;
    config.train.grad_dtype = c.grad_dtype;
    config.train.grad_accum = c.grad_accum;
    config.optimizer.master = optim::MasterMode::kF32;
    config.optimizer.state = optim::StateFormat::kF32;
    Trainer trainer(config, world(), TrainerOutput{.progress = false});
    const DType expected = world().world_size() > 1 ? DType::kF32 : c.kept;
    EXPECT_EQ(trainer.kept_grad_dtype(), expected)
        << recipe::enum_name(c.precision) << " / " << recipe::enum_name(c.grad_dtype) << " / accum " << c.grad_accum;
  }
}

// train.gemm_algorithm timed on the CPU: there is no algorithm to choose, so the run is the
// heuristic run bit for bit; the trainer still shares and saves the (empty) book after the first
// step, where heuristic saves none. (The book's contents through a checkpoint:
// test_gemm_plan_checkpoint.cpp; on a GPU, tools/gpu/check.sh's heuristic/timed pair.)
TEST(Trainer, TimedGemmAlgorithmsChangeNothingOnTheCpuAndSaveTheirBook) {
  TempDir heuristic_dir("gemm_heuristic"), timed_dir("gemm_timed");
  const recipe::RunConfig heuristic = base_config(heuristic_dir.path);
  recipe::RunConfig timed = base_config(timed_dir.path);
  timed.train.gemm_algorithm = recipe::GemmAlgorithmChoice::kTimed;
  const TrainResult a = Trainer(heuristic, world(), TrainerOutput{.progress = false}).train("", 2);
  const TrainResult b = Trainer(timed, world(), TrainerOutput{.progress = false}).train("", 2);
  EXPECT_EQ(a.last_loss, b.last_loss) << "bit for bit";
  EXPECT_FALSE(read_gemm_plan_book(H5CheckpointReader(a.last_checkpoint)).has_value());
  const std::optional<kernels::GemmPlanBook> book = read_gemm_plan_book(H5CheckpointReader(b.last_checkpoint));
  ASSERT_TRUE(book.has_value()) << "a timed run saves the book it shared";
  EXPECT_TRUE(book->choices.empty());
  // Resumed, it keeps the book, and steps as the heuristic run does.
  Trainer resumed(timed, world(), TrainerOutput{.progress = false});
  Trainer reference(heuristic, world(), TrainerOutput{.progress = false});
  resumed.load_checkpoint(b.last_checkpoint);
  reference.load_checkpoint(a.last_checkpoint);
  EXPECT_EQ(resumed.train_step().loss, reference.train_step().loss);
}

}  // namespace
}  // namespace farthing::train

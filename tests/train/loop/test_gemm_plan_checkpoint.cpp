// test_gemm_plan_checkpoint.cpp — the GEMM plan book in a training checkpoint
// (train/loop/train_checkpoint.h: write_gemm_plan_book / read_gemm_plan_book), through a real
// HDF5 file: a book comes back as written, a checkpoint without one reads as none, and a damaged
// book fails naming the file and the line. And the plan log's line (train/loop/gemm_plan_log.h).
#include <gtest/gtest.h>

#include <string>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/core/error.h"
#include "tests/train/loop/trainer_test_support.h"
#include "train/loop/gemm_plan_log.h"
#include "train/loop/train_checkpoint.h"

namespace farthing::train {
namespace {

namespace fs = std::filesystem;
using testing::world;

kernels::GemmPlanBook sample_book() {
  kernels::GemmPlanBook book;
  book.device = "NVIDIA H100 80GB HBM3";
  book.library_version = 130002;
  for (int p = 0; p < 3; ++p) {
    kernels::GemmAlgorithmBits bits{};
    for (size_t w = 0; w < bits.size(); ++w) bits[w] = uint64_t(p) * 1000 + w * 0x1111111111111111ull;
    book.choices["dense bf16 m " + std::to_string(64 << p) + " n 128 k 256 lda 256 ldb 128 ldc 128 trans NN out bf16 "
                 "align 256"] = bits;
  }
  return book;
}

// A checkpoint holding `text` as its book (or no book when null), and a tensor as checkpoints do.
fs::path write_checkpoint(const fs::path& dir, int64_t step, const kernels::GemmPlanBook* book,
                          const std::string* raw_text = nullptr) {
  H5CheckpointWriter writer(checkpoint_path_for_step(dir, step), world());
  float value = 1.0f;
  writer.write_tensor("model/x", DType::kF32, Shape{1}, 0, Tensor(&value, DType::kF32, Shape{1}));
  if (book != nullptr) write_gemm_plan_book(writer, *book);
  if (raw_text != nullptr) writer.write_string(kGemmPlanBookDataset, *raw_text);
  return writer.commit({.update_latest = false});
}

TEST(GemmPlanCheckpoint, ABookComesBackAsWritten) {
  testing::TempDir dir("gemm_book_round_trip");
  const kernels::GemmPlanBook book = sample_book();
  const fs::path path = write_checkpoint(dir.path, 1, &book);
  const std::optional<kernels::GemmPlanBook> back = read_gemm_plan_book(H5CheckpointReader(path));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, book);
  H5CheckpointReader(path).verify();  // its checksum as every dataset's
}

TEST(GemmPlanCheckpoint, NoBookReadsAsNone) {
  testing::TempDir dir("gemm_book_none");
  const fs::path path = write_checkpoint(dir.path, 1, nullptr);
  EXPECT_FALSE(read_gemm_plan_book(H5CheckpointReader(path)).has_value());
}

TEST(GemmPlanCheckpoint, ADamagedBookNamesTheFileAndTheLine) {
  testing::TempDir dir("gemm_book_damaged");
  const std::string text = "farthing gemm plan book 1\ndevice X\ncublaslt 1\nplan 12 short\n";
  const fs::path path = write_checkpoint(dir.path, 1, nullptr, &text);
  try {
    read_gemm_plan_book(H5CheckpointReader(path));
    ADD_FAILURE() << "a damaged book was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("checkpoint " + path.string() + "'s gemm_plan_book line 4: expected 'plan <128"),
              std::string::npos)
        << message;
  }
}

TEST(GemmPlanLog, OneLineNamesTheGemmItsAlgorithmAndRates) {
  kernels::GemmPlanRecord timed;
  timed.key = "dense bf16 m 8 n 8 k 8 lda 8 ldb 8 ldc 8 trans NN out f32 align 16";
  timed.algorithm = "algo 21 tile 18 stages 22 cluster 2 swizzle 0 custom 0 split_k 1";
  timed.tflops = 612.34;
  timed.candidate_tflops = {598.0, 612.34, 0.0};
  timed.how = "the book's choice: candidate 2 of 3 here";
  EXPECT_EQ(gemm_plan_record_line(timed),
            "gemm plan dense bf16 m 8 n 8 k 8 lda 8 ldb 8 ldc 8 trans NN out f32 align 16: algo 21 tile 18 stages 22 "
            "cluster 2 swizzle 0 custom 0 split_k 1, 612.3 TFLOP/s (candidates' TFLOP/s: 598.0 612.3 failed; the "
            "book's choice: candidate 2 of 3 here)");
  kernels::GemmPlanRecord untimed;
  untimed.key = "k";
  untimed.algorithm = "a";
  untimed.how = "the heuristic's first result; not timed: no device memory";
  EXPECT_EQ(gemm_plan_record_line(untimed),
            "gemm plan k: a, not timed (the heuristic's first result; not timed: no device memory)");
}

}  // namespace
}  // namespace farthing::train

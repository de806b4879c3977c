// test_data_sizing.cpp — `farthing init`'s sizing to the data (train/plan/data_sizing.h), worked
// by hand: a chat set of short documents gets a short seq_len, one held-out sequence and a step
// that fits its split; one long document fills the cap and holds out 5%; a set too small for a
// split gets none and one sequence a step; the cap always wins; packed as documents, the same
// set makes the padded sequences the trainer makes, and a document of one token is refused
// naming its file and line. Tests: train/plan/data_sizing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/core/error.h"

#include "train/plan/data_sizing.h"

namespace {

using farthing::train::DataSizing;
using farthing::data::DocumentExtents;
using farthing::data::LongDocuments;
using farthing::data::Packing;

farthing::train::DataSizing size_to_data(std::vector<int64_t> lengths, int64_t cap) {
  return farthing::train::size_to_data(DocumentExtents{"data.jsonl", std::move(lengths), {}}, cap);
}

TEST(DataSizing, ShortDocumentsGetAShortSequenceAndASmallStep) {
  // 20 conversations of 80 tokens: 90% fit 128; 1599 / 128 = 12 sequences.
  const std::vector<int64_t> lengths(20, 80);
  const DataSizing s = size_to_data(lengths, 1024);
  EXPECT_EQ(s.seq_len, 128);
  EXPECT_EQ(s.sequences, 12);
  EXPECT_EQ(s.eval_sequences, 1);
  EXPECT_EQ(std::llround(12 * s.eval_fraction), 1);  // as load_split_data rounds it
  EXPECT_EQ(s.train_sequences, 11);
  EXPECT_EQ(s.step_sequences, 2);  // 11 / 4
  EXPECT_EQ(s.steps, 17);          // ceil(3 epochs x 11 / 2)
  EXPECT_LE(s.step_sequences, s.train_sequences);
  EXPECT_NEAR(s.epochs, 34.0 / 11.0, 1e-12);
}

TEST(DataSizing, OneLongDocumentFillsTheCap) {
  const std::vector<int64_t> lengths{100000};
  const DataSizing s = size_to_data(lengths, 512);
  EXPECT_EQ(s.seq_len, 512);
  EXPECT_EQ(s.sequences, 195);  // 99999 / 512
  EXPECT_EQ(s.eval_fraction, 0.05);
  EXPECT_EQ(s.eval_sequences, 10);  // llround(9.75)
  EXPECT_EQ(s.train_sequences, 185);
  EXPECT_EQ(s.step_sequences, 8);
  EXPECT_EQ(s.steps, 70);  // ceil(3 x 185 / 8)
}

TEST(DataSizing, TooSmallForASplit) {
  // 60 tokens: one sequence of the shortest length, nothing held out.
  const std::vector<int64_t> lengths{20, 20, 20};
  const DataSizing s = size_to_data(lengths, 1024);
  EXPECT_EQ(s.seq_len, 32);
  EXPECT_EQ(s.sequences, 1);
  EXPECT_EQ(s.eval_fraction, 0.0);
  EXPECT_EQ(s.eval_sequences, 0);
  EXPECT_EQ(s.train_sequences, 1);
  EXPECT_EQ(s.step_sequences, 1);
  EXPECT_EQ(s.steps, 3);
}

TEST(DataSizing, TheCapWinsAndFewSequencesHalveTheLength) {
  // 90% of documents within 300 tokens -> 512, but the cap is 256.
  std::vector<int64_t> lengths(50, 300);
  EXPECT_EQ(size_to_data(lengths, 256).seq_len, 256);
  EXPECT_EQ(size_to_data(lengths, 16).seq_len, 16);
  // 10 documents of 300: 2999 tokens are 5 sequences of 512, under 8: halved to 256 (11).
  lengths.assign(10, 300);
  const DataSizing s = size_to_data(lengths, 1024);
  EXPECT_EQ(s.seq_len, 256);
  EXPECT_EQ(s.sequences, 11);
}

TEST(DataSizing, DocumentsPackAsTheTrainerPacksThem) {
  // The 20 conversations of 80 tokens above, kept apart: 79 slots each, so one a sequence of 128
  // (two would need 158): 20 sequences where the stream made 12.
  const DocumentExtents documents{"chat.jsonl", std::vector<int64_t>(20, 80), {}};
  const DataSizing s = farthing::train::size_to_data(documents, 1024, Packing::kDocuments, LongDocuments::kSplit);
  EXPECT_EQ(s.seq_len, 128);
  EXPECT_EQ(s.sequences, 20);
  EXPECT_EQ(s.eval_sequences, 1);   // llround(20 x 0.05)
  EXPECT_EQ(s.train_sequences, 19);
  EXPECT_EQ(s.step_sequences, 4);   // 19 / 4
  EXPECT_EQ(s.steps, 15);           // ceil(3 epochs x 19 / 4)
}

TEST(DataSizing, AOneTokenDocumentIsNamedByFileAndLine) {
  const DocumentExtents documents{"chat.jsonl", {40, 1, 40}, {1, 2, 3}};
  try {
    farthing::train::size_to_data(documents, 1024, Packing::kDocuments, LongDocuments::kSplit);
    ADD_FAILURE() << "a document of one token was sized";
  } catch (const farthing::Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat.jsonl:2: a document of 1 token(s) has nothing to predict"),
              std::string::npos) << e.what();
  }
}

}  // namespace

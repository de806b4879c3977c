// test_packing.cpp — documents into one (token, mask) stream and llm.c-style packed sequences,
// checked exactly on a hand-made stream: sequence boundaries with one token of overlap, targets
// shifted by one, -100 where the target token is masked, the tail dropped, loss_tokens, and a
// dataset that is a range of another's sequences. Tests: data/packing.
#include <gtest/gtest.h>

#include <memory>

#include "framework/data/packing.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using farthing::test::expect_error;
using farthing::test::sequence_of;
using Ids = std::vector<int32_t>;
constexpr int32_t X = kIgnoreTarget;

// [1 10 11 12 2] [1 20 21 22 23 2]; the second document is prompt 20 21 / response 22 23, its
// BOS not trained.
std::shared_ptr<const TokenStream> hand_made_stream() {
  auto stream = std::make_shared<TokenStream>();
  const Ids doc1 = {10, 11, 12}, doc2 = {20, 21, 22, 23};
  const std::vector<uint8_t> mask2 = {0, 0, 1, 1};
  append_document(*stream, doc1, {}, {1, true, 2, true});
  append_document(*stream, doc2, mask2, {1, false, 2, true});
  return stream;
}

TEST(Packing, AppendDocumentPutsBosEosAndMasks) {
  const auto stream = hand_made_stream();
  EXPECT_EQ(stream->tokens, (Ids{1, 10, 11, 12, 2, 1, 20, 21, 22, 23, 2}));
  EXPECT_EQ(stream->loss_mask, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1}));
  TokenStream bare;
  const Ids doc = {5, 6};
  append_document(bare, doc, {}, {});  // no BOS/EOS
  EXPECT_EQ(bare.tokens, doc);
  expect_error([&] { append_document(bare, doc, std::vector<uint8_t>{1}, {}); }, {"2 tokens", "1 loss-mask"});
}

TEST(Packing, SequenceCountDropsTheTail) {
  EXPECT_EQ(packed_sequence_count(11, 3), 3);   // 3 * 3 + 1 = 10 <= 11
  EXPECT_EQ(packed_sequence_count(10, 3), 3);
  EXPECT_EQ(packed_sequence_count(9, 3), 2);
  EXPECT_EQ(packed_sequence_count(4, 3), 1);
  EXPECT_EQ(packed_sequence_count(3, 3), 0);    // needs seq_len + 1 tokens
  EXPECT_EQ(packed_sequence_count(0, 3), 0);
  expect_error([] { packed_sequence_count(10, 0); }, {"seq_len is 0"});
}

TEST(Packing, SequencesOverlapByOneTokenAndMaskTargets) {
  const PackedDataset d(hand_made_stream(), "hand-made", 3, 0, 3);
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.seq_len(), 3);
  EXPECT_EQ(d.source(), "hand-made");
  // positions [0,4) [3,7) [6,10); position 10 (the last EOS) is the dropped tail
  EXPECT_EQ(sequence_of(d, 0).tokens, (Ids{1, 10, 11}));
  EXPECT_EQ(sequence_of(d, 0).targets, (Ids{10, 11, 12}));
  EXPECT_EQ(sequence_of(d, 1).tokens, (Ids{12, 2, 1}));
  EXPECT_EQ(sequence_of(d, 1).targets, (Ids{2, X, X}));  // next BOS and prompt token untrained
  EXPECT_EQ(sequence_of(d, 2).tokens, (Ids{20, 21, 22}));
  EXPECT_EQ(sequence_of(d, 2).targets, (Ids{X, 22, 23}));
  EXPECT_EQ(d.loss_tokens(), 3 + 1 + 2);
}

TEST(Packing, SequencesThatUseEveryToken) {
  const PackedDataset d(hand_made_stream(), "hand-made", 5, 0, 2);
  EXPECT_EQ(sequence_of(d, 0).tokens, (Ids{1, 10, 11, 12, 2}));
  EXPECT_EQ(sequence_of(d, 0).targets, (Ids{10, 11, 12, 2, X}));
  EXPECT_EQ(sequence_of(d, 1).tokens, (Ids{1, 20, 21, 22, 23}));
  EXPECT_EQ(sequence_of(d, 1).targets, (Ids{X, X, 22, 23, 2}));
  EXPECT_EQ(d.loss_tokens(), 4 + 3);
}

TEST(Packing, ARangeOfSequences) {
  const PackedDataset tail(hand_made_stream(), "hand-made", 3, 1, 2);
  ASSERT_EQ(tail.size(), 2);
  EXPECT_EQ(sequence_of(tail, 0).tokens, (Ids{12, 2, 1}));
  EXPECT_EQ(sequence_of(tail, 1).targets, (Ids{X, 22, 23}));
  EXPECT_EQ(tail.loss_tokens(), 1 + 2);
  expect_error([&] { sequence_of(tail, 2); }, {"hand-made", "sequence 2", "2 sequences"});
  expect_error([&] { sequence_of(tail, -1); }, {"sequence -1"});
  expect_error([] { PackedDataset(hand_made_stream(), "hand-made", 3, 2, 2); }, {"hand-made", "[2, 4)", "11 tokens"});
  const PackedDataset empty;
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.loss_tokens(), 0);
}

TEST(Packing, TokenIdsAreCheckedAgainstTheVocabulary) {
  const Ids ids = {0, 5, 511, 512, 3};
  check_token_ids(std::span(ids).first(3), 512, "data.txt");
  expect_error([&] { check_token_ids(ids, 512, "data.txt", 100); }, {"data.txt", "token 103", "id 512", "vocab_size 512"});
  const Ids negative = {-1};
  expect_error([&] { check_token_ids(negative, 512, "data.txt"); }, {"token 0", "id -1"});
}

}  // namespace

// test_dataset_split.cpp — load_split_data: the held-out eval set is the END of the train
// file's packed sequences, sized round(n * eval_fraction) but at least 1 (none when 0); an eval
// file is packed on its own; the format is picked by magic and extension or forced; token files
// load without a tokenizer, every token trained and nothing added. Tests: data/dataset.
#include <gtest/gtest.h>

#include "framework/data/dataset.h"
#include "framework/data/token_file.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;
using Ids = std::vector<int32_t>;

DatasetOptions options(int64_t seq_len, double eval_fraction) {
  DatasetOptions o;
  o.seq_len = seq_len;
  o.eval_fraction = eval_fraction;
  return o;
}

TEST(DatasetSplit, EvalIsTheTailOfTrain) {
  const TempDir dir("farthing-split");
  const Tokenizer tok(byte_tokenizer_spec());
  // <s> a b c d e f g h i j </s>: 12 tokens, 5 sequences of 2 (positions 0..10; the EOS target is the tail)
  const auto path = write_file(dir / "letters.txt", "abcdefghij");
  const SplitData d = load_split_data(path, "", options(2, 0.05), &tok, 260);
  ASSERT_EQ(d.train.size(), 4);  // round(5 * 0.05) = 0, raised to 1
  ASSERT_EQ(d.eval.size(), 1);
  EXPECT_EQ(sequence_of(d.train, 0).tokens, (Ids{kByteBos, 'a'}));
  EXPECT_EQ(sequence_of(d.train, 0).targets, (Ids{'a', 'b'}));
  EXPECT_EQ(sequence_of(d.train, 3).tokens, (Ids{'f', 'g'}));
  EXPECT_EQ(sequence_of(d.eval, 0).tokens, (Ids{'h', 'i'}));
  EXPECT_EQ(sequence_of(d.eval, 0).targets, (Ids{'i', 'j'}));
  EXPECT_EQ(d.train.loss_tokens(), 8);
  EXPECT_EQ(d.eval.loss_tokens(), 2);
  EXPECT_EQ(d.train.source(), path.string());
  EXPECT_EQ(d.eval.source(), path.string());
  EXPECT_EQ(d.train.seq_len(), 2);
}

TEST(DatasetSplit, SplitSizes) {
  const TempDir dir("farthing-split");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "letters.txt", "abcdefghij");  // 5 sequences of 2
  struct Case {
    double fraction;
    int64_t train, eval;
  };
  for (const Case& c : {Case{0.0, 5, 0}, Case{0.05, 4, 1}, Case{0.3, 3, 2}, Case{0.4, 3, 2}, Case{0.5, 2, 3},
                        Case{0.79, 1, 4}}) {
    const SplitData d = load_split_data(path, "", options(2, c.fraction), &tok, 260);
    EXPECT_EQ(d.train.size(), c.train) << c.fraction;
    EXPECT_EQ(d.eval.size(), c.eval) << c.fraction;
  }
  // 100 sequences of 1 (101 tokens: <s>, 99 bytes, </s>)
  const auto hundred = write_file(dir / "hundred.txt", std::string(99, 'x'));
  const SplitData d = load_split_data(hundred, "", options(1, 0.05), &tok, 260);
  EXPECT_EQ(d.train.size(), 95);
  EXPECT_EQ(d.eval.size(), 5);
}

TEST(DatasetSplit, EvalFileIsPackedOnItsOwn) {
  const TempDir dir("farthing-split");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto train = write_file(dir / "train.txt", "abcdefghij");
  const auto eval = write_file(dir / "eval.jsonl", "{\"prompt\": \"q\", \"response\": \"rs\"}\n");
  const SplitData d = load_split_data(train, eval, options(2, 0.5), &tok, 260);  // eval_fraction unused
  EXPECT_EQ(d.train.size(), 5);
  ASSERT_EQ(d.eval.size(), 2);  // <s> q r s </s>
  EXPECT_EQ(d.eval.source(), eval.string());
  EXPECT_EQ(sequence_of(d.eval, 0).targets, (Ids{kIgnoreTarget, 'r'}));
  EXPECT_EQ(sequence_of(d.eval, 1).targets, (Ids{'s', kByteEos}));
  EXPECT_EQ(d.eval.loss_tokens(), 3);
}

TEST(DatasetSplit, FormatByMagicExtensionOrOption) {
  const TempDir dir("farthing-split");
  const Ids ids = {5, 6, 7};
  write_token_file(dir / "ids.dat", ids, 300);
  EXPECT_EQ(dataset_format(dir / "ids.dat", DataFormat::kAuto), DataFormat::kTokens);  // FTOK magic, any name
  EXPECT_EQ(dataset_format(write_file(dir / "a.JSONL", "{}"), DataFormat::kAuto), DataFormat::kJsonl);
  EXPECT_EQ(dataset_format(write_file(dir / "a.txt", "hello"), DataFormat::kAuto), DataFormat::kText);
  EXPECT_EQ(dataset_format(write_file(dir / "noext", ""), DataFormat::kAuto), DataFormat::kText);
  EXPECT_EQ(dataset_format(dir / "a.JSONL", DataFormat::kText), DataFormat::kText);
  // Forced text reads JSON as characters.
  const Tokenizer tok(byte_tokenizer_spec());
  DatasetOptions o;
  o.format = DataFormat::kText;
  o.add_bos = o.add_eos = false;
  EXPECT_EQ(load_token_stream(dir / "a.JSONL", o, &tok, 260).tokens, byte_ids("{}"));
}

TEST(DatasetSplit, TokenFilesNeedNoTokenizerAndTrainEveryToken) {
  const TempDir dir("farthing-split");
  const Ids ids = {1, 10, 11, 12, 2, 1, 20, 21, 22, 2};
  write_token_file(dir / "train.bin", ids, 512);
  const SplitData d = load_split_data(dir / "train.bin", "", options(3, 0.0), nullptr, 512);
  ASSERT_EQ(d.train.size(), 3);
  EXPECT_EQ(d.eval.size(), 0);
  EXPECT_EQ(sequence_of(d.train, 1).tokens, (Ids{12, 2, 1}));
  EXPECT_EQ(sequence_of(d.train, 1).targets, (Ids{2, 1, 20}));
  EXPECT_EQ(d.train.loss_tokens(), 9);
  // add_bos/add_eos do not apply: the file is the stream.
  const TokenStream s = load_token_stream(dir / "train.bin", DatasetOptions{}, nullptr, 512);
  EXPECT_EQ(s.tokens, ids);
}

}  // namespace

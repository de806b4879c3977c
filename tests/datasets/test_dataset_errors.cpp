// test_dataset_errors.cpp — every way a dataset can be unusable gives an Error that names the
// file and what was expected: missing or unreadable files, no tokenizer for text, unknown or
// mislabelled formats, ids the model cannot embed (token files and tokenized text), too few
// tokens for one sequence, a split that leaves no train sequence, and bad options.
// Tests: data/dataset, data/packing.
#include <gtest/gtest.h>

#include "framework/data/dataset.h"
#include "framework/data/token_file.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;
using Ids = std::vector<int32_t>;

DatasetOptions options(int64_t seq_len, double eval_fraction = 0.05) {
  DatasetOptions o;
  o.seq_len = seq_len;
  o.eval_fraction = eval_fraction;
  return o;
}

class DatasetErrors : public ::testing::Test {
 protected:
  TempDir dir{"farthing-errors"};
  Tokenizer tok{byte_tokenizer_spec()};
  std::filesystem::path text = write_file(dir / "text.txt", std::string(100, 'a'));
};

TEST_F(DatasetErrors, MissingFiles) {
  const auto missing = dir / "nope.txt";
  expect_error([&] { load_split_data(missing, "", options(8), &tok, 260); }, {missing.string(), "does not exist"});
  expect_error([&] { load_split_data(text, dir / "eval.jsonl", options(8), &tok, 260); }, {"eval.jsonl", "does not exist"});
  expect_error([&] { load_split_data(dir.path(), "", options(8), &tok, 260); }, {dir.path().string(), "not a file"});
  expect_error([&] { load_split_data("", "", options(8), &tok, 260); }, {"no dataset file"});
}

TEST_F(DatasetErrors, TextNeedsATokenizer) {
  expect_error([&] { load_split_data(text, "", options(8), nullptr, 260); }, {"text.txt", "needs a tokenizer"});
  const auto jsonl = write_file(dir / "d.jsonl", "{\"text\": \"a\"}\n");
  expect_error([&] { load_split_data(jsonl, "", options(8), nullptr, 260); }, {"d.jsonl", "JSONL", "needs a tokenizer"});
}

TEST_F(DatasetErrors, Formats) {
  // An unknown format name is the recipe's error (tests/train/recipe/test_recipe_errors.cpp).
  DatasetOptions o = options(8);
  const auto llmc = write_file(dir / "llmc.bin", std::string("\x20\x0c\x35\x01", 4) + std::string(60, '\0'));
  expect_error([&] { load_split_data(llmc, "", options(8), &tok, 260); }, {"llmc.bin", "FTOK", "farthing tokenize"});
  o.format = DataFormat::kTokens;
  expect_error([&] { load_split_data(text, "", o, &tok, 260); }, {"text.txt", "FTOK"});
}

TEST_F(DatasetErrors, IdsBeyondTheModelsVocabulary) {
  const Ids ids = {1, 2, 600, 3, 4, 5, 6, 7, 8, 9};
  write_token_file(dir / "big.tok", ids, 1000);
  expect_error([&] { load_split_data(dir / "big.tok", "", options(4), nullptr, 512); },
               {"big.tok", "token 2 has id 600", "vocab_size 512", "1000"});
  // Tokenized text: a tokenizer larger than the model ('~' is 126).
  const auto tilde = write_file(dir / "tilde.txt", "ab~cd");
  expect_error([&] { load_split_data(tilde, "", options(2), &tok, 100); },
               {"tilde.txt", "token 2 has id 126", "vocab_size 100"});
  DatasetOptions o = options(2);
  o.add_bos = false;  // BOS (256) and EOS (257) are checked too
  expect_error([&] { load_split_data(write_file(dir / "ab.txt", "ab"), "", o, &tok, 257); },
               {"ab.txt (EOS)", "id 257", "vocab_size 257"});
}

TEST_F(DatasetErrors, TooFewTokens) {
  const auto shorty = write_file(dir / "short.txt", "ab");  // <s> a b </s>
  expect_error([&] { load_split_data(shorty, "", options(8), &tok, 260); },
               {"train file", "short.txt", "has 4 tokens", "seq_len + 1 = 9", "shorter seq_len", "more data"});
  expect_error([&] { load_split_data(write_file(dir / "empty.txt", ""), "", options(2), &tok, 260); },
               {"text file", "empty.txt", "is empty: an empty document"});
  expect_error([&] { load_split_data(text, shorty, options(8), &tok, 260); }, {"eval file", "short.txt", "has 4 tokens"});
  // 102 tokens = 1 sequence of 64: eval_fraction would take it.
  expect_error([&] { load_split_data(text, "", options(64), &tok, 260); },
               {"text.txt", "102 tokens", "1 sequence(s) of seq_len 64", "eval_fraction 0.05", "leaving none to train",
                "shorter seq_len", "eval file"});
  const auto blank = write_file(dir / "blank.jsonl", "\n\n  \n");
  expect_error([&] { load_split_data(blank, "", options(2), &tok, 260); }, {"blank.jsonl", "has 0 tokens"});
}

TEST_F(DatasetErrors, BadOptions) {
  expect_error([&] { load_split_data(text, "", options(0), &tok, 260); }, {"seq_len is 0"});
  expect_error([&] { load_split_data(text, "", options(8, 1.0), &tok, 260); }, {"eval_fraction is 1", "[0, 1)"});
  expect_error([&] { load_split_data(text, "", options(8, -0.1), &tok, 260); }, {"eval_fraction is -0.1"});
  expect_error([&] { load_split_data(text, "", options(8), &tok, 0); }, {"vocab_size is 0"});
}

}  // namespace

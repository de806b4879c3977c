// test_dataset_shared.cpp — a real corpus end to end: tinyshakespeare (1.1 MB) with stories260K's
// tok512.bin packs into exactly BOS + encode(text) + EOS, split 95/5 by sequences, every target
// trained; the same ids written as a token file load to identical sequences without a tokenizer.
// Prints the load time (not asserted: timings belong to benchmarks). Needs ../shared.
// Tests: data/dataset, data/packing, data/token_file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "framework/data/dataset.h"
#include "framework/data/token_file.h"
#include "framework/data/tokenizer_loaders.h"
#include "tests/datasets/dataset_test_support.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;

TEST(DatasetShared, TinyShakespeareWithTok512) {
  FARTHING_REQUIRE_SHARED(shared);
  const auto text_path = shared / "text/tinyshakespeare.txt";
  const Tokenizer tok = load_tokenizer(shared / "models/stories260K/tok512.bin");
  DatasetOptions o;
  o.seq_len = 256;

  const auto start = std::chrono::steady_clock::now();
  const SplitData d = load_split_data(text_path, "", o, &tok, 512);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("tinyshakespeare with tok512: %lld + %lld sequences of %lld loaded in %.2f s\n",
              (long long)d.train.size(), (long long)d.eval.size(), (long long)o.seq_len, seconds);

  std::ifstream in(text_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int32_t> expected = {tok.bos_id()};
  for (int32_t id : tok.encode(ss.str(), false)) expected.push_back(id);
  expected.push_back(tok.eos_id());

  const int64_t n = int64_t(expected.size() - 1) / o.seq_len;
  const int64_t n_eval = std::max<int64_t>(1, std::llround(double(n) * 0.05));
  ASSERT_EQ(d.train.size(), n - n_eval);
  ASSERT_EQ(d.eval.size(), n_eval);
  EXPECT_EQ(d.train.loss_tokens(), d.train.size() * o.seq_len);
  EXPECT_EQ(d.eval.loss_tokens(), d.eval.size() * o.seq_len);
  for (int64_t i : {int64_t(0), int64_t(1), d.train.size() - 1}) {
    const Sequence s = sequence_of(d.train, i);
    const auto at = expected.begin() + i * o.seq_len;
    EXPECT_EQ(s.tokens, std::vector<int32_t>(at, at + o.seq_len)) << i;
    EXPECT_EQ(s.targets, std::vector<int32_t>(at + 1, at + 1 + o.seq_len)) << i;
  }
  const std::vector<int32_t> first = sequence_of(d.train, 0).tokens;
  EXPECT_EQ(first[0], tok.bos_id());
  EXPECT_EQ(tok.decode(std::span(first).subspan(1)).substr(0, 15), "First Citizen:\n");
  const Sequence last_eval = sequence_of(d.eval, n_eval - 1);
  const auto at = expected.begin() + (n - 1) * o.seq_len;
  EXPECT_EQ(last_eval.targets, std::vector<int32_t>(at + 1, at + 1 + o.seq_len));

  // The same stream as a token file: identical sequences, no tokenizer needed.
  const TempDir dir("farthing-shared");
  write_token_file(dir / "shakespeare.tok", expected, 512);
  const SplitData t = load_split_data(dir / "shakespeare.tok", "", o, nullptr, 512);
  ASSERT_EQ(t.train.size(), d.train.size());
  for (int64_t i : {int64_t(0), d.train.size() / 2}) {
    EXPECT_EQ(sequence_of(t.train, i).tokens, sequence_of(d.train, i).tokens);
    EXPECT_EQ(sequence_of(t.train, i).targets, sequence_of(d.train, i).targets);
  }
}

}  // namespace

// test_document_packing.cpp — data.packing documents and none (framework/data/document_packing.h):
// whole documents placed into sequences with their starts, the last sequence padded (token 0,
// target -100, a document of its own), long documents truncated, split or refused, the counts,
// auto resolving by the data, and the errors: a document longer than seq_len under error, a
// one-token document, an empty one, each naming file:line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/data/document_packing.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;
using Ids = std::vector<int32_t>;

constexpr int32_t X = kIgnoreTarget;

struct Slots {
  Ids tokens, targets, starts;
};
Slots slots_of(const PackedDataset& d, int64_t index) {
  const size_t L = size_t(d.seq_len());
  Slots s{Ids(L), Ids(L), Ids(L)};
  d.sequence(index, s.tokens.data(), s.targets.data(), s.starts.data());
  return s;
}

DatasetOptions options(int64_t seq_len, Packing packing, LongDocuments long_documents = LongDocuments::kSplit) {
  DatasetOptions o;
  o.format = DataFormat::kJsonl;
  o.seq_len = seq_len;
  o.eval_fraction = 0.0;
  o.packing = packing;
  o.long_documents = long_documents;
  return o;
}

// Prompt/response lines: <s> prompt response </s>, loss on the response and </s>.
const char* kThree =
    "{\"prompt\": \"ab\", \"response\": \"c\"}\n"     // <s> a b c </s>: 5 tokens, 4 slots
    "{\"prompt\": \"d\", \"response\": \"ef\"}\n"     // <s> d e f </s>: 5 tokens, 4 slots
    "{\"prompt\": \"g\", \"response\": \"h\"}\n";     // <s> g h </s>: 4 tokens, 3 slots

TEST(DocumentPacking, DocumentsShareSequencesAndTheLastIsPadded) {
  const TempDir dir("farthing-docpack");
  const farthing::data::Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "pr.jsonl", kThree);
  const SplitData data = load_split_data(path, "", options(10, Packing::kAuto), &tok, 260);
  EXPECT_EQ(data.packing, Packing::kDocuments);  // auto: prompt/response data
  ASSERT_EQ(data.train.size(), 2);               // 4 + 4 slots, then 3 do not fit in the 2 left
  ASSERT_TRUE(data.train.has_documents());
  const Slots a = slots_of(data.train, 0);
  EXPECT_EQ(a.tokens, (Ids{kByteBos, 'a', 'b', 'c', kByteBos, 'd', 'e', 'f', 0, 0}));
  EXPECT_EQ(a.targets, (Ids{X, X, 'c', kByteEos, X, 'e', 'f', kByteEos, X, X}));
  EXPECT_EQ(a.starts, (Ids{0, 0, 0, 0, 4, 4, 4, 4, 8, 8}));
  const Slots b = slots_of(data.train, 1);
  EXPECT_EQ(b.tokens, (Ids{kByteBos, 'g', 'h', 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.targets, (Ids{X, 'h', kByteEos, X, X, X, X, X, X, X}));
  EXPECT_EQ(b.starts, (Ids{0, 0, 0, 3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(data.train.loss_tokens(), 7);
  EXPECT_EQ(data.train_counts.documents, 3);
  EXPECT_EQ(data.train_counts.slots, 20);
  EXPECT_EQ(data.train_counts.padding_slots, 9);
  EXPECT_EQ(data.train_counts.documents_cut, 0);
}

TEST(DocumentPacking, NoneGivesEachDocumentItsOwnSequence) {
  const TempDir dir("farthing-docpack");
  const farthing::data::Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "pr.jsonl", kThree);
  const SplitData data = load_split_data(path, "", options(10, Packing::kNone), &tok, 260);
  ASSERT_EQ(data.train.size(), 3);
  EXPECT_EQ(slots_of(data.train, 1).tokens, (Ids{kByteBos, 'd', 'e', 'f', 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(slots_of(data.train, 1).starts, (Ids{0, 0, 0, 0, 4, 4, 4, 4, 4, 4}));
  EXPECT_EQ(data.train_counts.padding_slots, 6 + 6 + 7);
}

TEST(DocumentPacking, StreamStaysTheDefaultForTextAndWritesOneDocument) {
  const TempDir dir("farthing-docpack");
  const farthing::data::Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "t.jsonl", "{\"text\": \"abcdefgh\"}\n{\"text\": \"ijklmnop\"}\n");
  const SplitData data = load_split_data(path, "", options(8, Packing::kAuto), &tok, 260);
  EXPECT_EQ(data.packing, Packing::kStream);
  EXPECT_FALSE(data.train.has_documents());
  ASSERT_EQ(data.train.size(), 2);  // 20 tokens: (20 - 1) / 8 sequences, 3 tokens dropped
  EXPECT_EQ(data.train_counts.tokens_dropped, 3);
  EXPECT_EQ(slots_of(data.train, 1).starts, Ids(8, 0));
}

TEST(DocumentPacking, LongDocumentsAreSplitTruncatedOrRefused) {
  const TempDir dir("farthing-docpack");
  const farthing::data::Tokenizer tok(byte_tokenizer_spec());
  // Line 2: <s> p q r s t u v w </s>: 10 tokens, 9 slots, longer than a sequence of 4.
  const auto path = write_file(dir / "long.jsonl",
                               "{\"prompt\": \"a\", \"response\": \"b\"}\n"
                               "{\"prompt\": \"pq\", \"response\": \"rstuvw\"}\n");
  const SplitData split = load_split_data(path, "", options(4, Packing::kDocuments, LongDocuments::kSplit), &tok, 260);
  // Inputs [<s> a] + pad | [<s> p q r] | [s t u v] | [w] + pad: a piece's last target (s, w) is
  // the next piece's first input, and each piece starts its own positions.
  ASSERT_EQ(split.train.size(), 4);
  EXPECT_EQ(slots_of(split.train, 1).targets, (Ids{X, X, 'r', 's'}));
  EXPECT_EQ(slots_of(split.train, 2).tokens, (Ids{'s', 't', 'u', 'v'}));
  EXPECT_EQ(slots_of(split.train, 2).targets, (Ids{'t', 'u', 'v', 'w'}));
  EXPECT_EQ(slots_of(split.train, 2).starts, (Ids{0, 0, 0, 0}));
  EXPECT_EQ(slots_of(split.train, 3).tokens, (Ids{'w', 0, 0, 0}));
  EXPECT_EQ(slots_of(split.train, 3).targets, (Ids{kByteEos, X, X, X}));
  EXPECT_EQ(split.train_counts.documents_cut, 1);
  EXPECT_EQ(split.train.loss_tokens(), 2 + 7);  // b </s>, then r..w </s>: nothing lost

  const SplitData cut =
      load_split_data(path, "", options(4, Packing::kDocuments, LongDocuments::kTruncate), &tok, 260);
  ASSERT_EQ(cut.train.size(), 2);
  EXPECT_EQ(slots_of(cut.train, 1).tokens, (Ids{kByteBos, 'p', 'q', 'r'}));
  EXPECT_EQ(cut.train_counts.tokens_cut, 5);

  expect_error([&] { load_split_data(path, "", options(4, Packing::kDocuments, LongDocuments::kError), &tok, 260); },
               {"long.jsonl:2", "10 tokens", "data.seq_len 4", "data.long_documents is error"});
}

TEST(DocumentPacking, DocumentsWithNothingToPredictAreRefused) {
  const TempDir dir("farthing-docpack");
  const farthing::data::Tokenizer tok(byte_tokenizer_spec());
  DatasetOptions o = options(8, Packing::kDocuments);
  o.add_bos = false;
  o.add_eos = false;
  const auto one = write_file(dir / "one.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"z\"}\n");
  expect_error([&] { load_split_data(one, "", o, &tok, 260); }, {"one.jsonl:2", "1 token(s)", "nothing to predict"});
  const auto empty = write_file(dir / "empty.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"\"}\n");
  expect_error([&] { load_split_data(empty, "", o, &tok, 260); }, {"empty.jsonl:2"});
}

}  // namespace

// test_dataset_documents.cpp — a file's documents one at a time: a JSONL file's documents, put
// back to back, are exactly the stream load_token_stream reads (BOS/EOS and masks included), each
// named by file:line and the key that decided its kind; a text file is one document. The packing
// summary on a hand-worked stream: sequences, the split, trained targets per split, documents cut
// by a sequence boundary and dropped past the last sequence. Tests: data/dataset_documents.
#include <gtest/gtest.h>

#include "framework/data/dataset.h"
#include "framework/data/dataset_documents.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;

TEST(DatasetDocuments, JsonlDocumentsAreTheStreamOneByOne) {
  const TempDir dir("farthing-documents");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "mix.jsonl",
                               "{\"text\": \"ab\"}\n"
                               "\n"
                               "{\"prompt\": \"Q:\", \"response\": \"A\"}\n"
                               "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, "
                               "{\"role\": \"assistant\", \"content\": \"yo\"}]}\n");
  DatasetOptions o;
  o.chat_template = "chatml";
  std::vector<DataDocument> docs;
  for_each_document(path, o, &tok, 260, [&](const DataDocument& d) { docs.push_back(d); });
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].where, path.string() + ":1");
  EXPECT_EQ(docs[1].where, path.string() + ":3");
  EXPECT_EQ(docs[2].where, path.string() + ":4");
  EXPECT_EQ(docs[0].kind, "text");
  EXPECT_EQ(docs[1].kind, "prompt/response");
  EXPECT_EQ(docs[2].kind, "messages");
  TokenStream joined;
  for (const DataDocument& d : docs) {
    ASSERT_EQ(d.tokens.size(), d.loss_mask.size());
    joined.tokens.insert(joined.tokens.end(), d.tokens.begin(), d.tokens.end());
    joined.loss_mask.insert(joined.loss_mask.end(), d.loss_mask.begin(), d.loss_mask.end());
  }
  const TokenStream whole = load_token_stream(path, o, &tok, 260);
  EXPECT_EQ(joined.tokens, whole.tokens);
  EXPECT_EQ(joined.loss_mask, whole.loss_mask);
  // The chat's assistant content and its <|im_end|> are trained, the rest not.
  int trained = 0;
  for (uint8_t m : docs[2].loss_mask) trained += m;
  EXPECT_EQ(trained, 3);  // "yo" + <|im_end|>

  const auto text = write_file(dir / "t.txt", "abc");
  std::vector<DataDocument> one;
  for_each_document(text, o, &tok, 260, [&](const DataDocument& d) { one.push_back(d); });
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].kind, "text file");
  EXPECT_EQ(one[0].tokens, (std::vector<int32_t>{kByteBos, 'a', 'b', 'c', kByteEos}));
}

// Documents of 3, 5, 4 and 2 tokens (14) in sequences of 4: (14 - 1) / 4 = 3 sequences reading
// positions 0..12; position 13 is dropped. The 5-token document [3, 8) spans the boundary at 4;
// [8, 12) starts on one; [12, 14) runs past position 12.
TEST(DatasetDocuments, PackingSummaryByHand) {
  const DocumentExtents lengths{"data.jsonl", {3, 5, 4, 2}, {}};
  std::vector<uint8_t> mask(14, 1);
  for (int p = 3; p < 8; ++p) mask[size_t(p)] = 0;  // the second document trains nothing
  const PackingSummary s = summarize_packing(lengths, mask, 4, 0.34);
  EXPECT_EQ(s.documents, 4);
  EXPECT_EQ(s.tokens, 14);
  EXPECT_EQ(s.longest_document, 5);
  EXPECT_EQ(s.median_document, 4);
  EXPECT_EQ(s.sequences, 3);
  EXPECT_EQ(s.eval_sequences, 1);  // llround(3 * 0.34) = 1
  EXPECT_EQ(s.train_sequences, 2);
  EXPECT_EQ(s.train_trained_tokens, 3);  // targets 1..8 carrying loss: 1, 2, 8
  EXPECT_EQ(s.eval_trained_tokens, 4);   // targets 9..12
  EXPECT_EQ(s.padding_tokens, 0);
  EXPECT_EQ(s.documents_cut, 1);
  EXPECT_EQ(s.tokens_dropped, 1);
  EXPECT_EQ(s.documents_dropped, 1);
  // No eval split: every sequence trains; fewer tokens than one sequence: none at all.
  EXPECT_EQ(summarize_packing(lengths, mask, 4, 0.0).train_trained_tokens, 7);
  const PackingSummary tiny = summarize_packing(DocumentExtents{"data.jsonl", {3}, {}}, std::vector<uint8_t>(3, 1), 4, 0.05);
  EXPECT_EQ(tiny.sequences, 0);
  EXPECT_EQ(tiny.documents_dropped, 1);
  EXPECT_EQ(tiny.tokens_dropped, 3);
}

}  // namespace

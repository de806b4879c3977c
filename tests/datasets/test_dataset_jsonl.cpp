// test_dataset_jsonl.cpp — JSONL lines into (token, mask) streams with a byte tokenizer (token =
// byte), so every expected id is written as text: "text" trains every token, "prompt" +
// "response"/"completion" only the response and EOS, blank lines are skipped, BOS/EOS follow the
// options, packed targets are -100 on the prompt; and every malformed line (or empty document) is
// refused naming file:line and the keys expected. Tests: data/dataset_jsonl, data/dataset.
#include <gtest/gtest.h>

#include "framework/data/dataset.h"
#include "tests/datasets/dataset_test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;
using Ids = std::vector<int32_t>;
using Mask = std::vector<uint8_t>;

Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

DatasetOptions jsonl_options() {
  DatasetOptions o;
  o.format = DataFormat::kAuto;
  return o;
}

TEST(DatasetJsonl, TextAndPromptResponseMasks) {
  const TempDir dir("farthing-jsonl");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "mix.jsonl",
                               "{\"text\": \"ab\"}\n"
                               "\n"
                               "{\"prompt\": \"Q:\", \"response\": \"A\"}\r\n"
                               "   \r\n"
                               "{\"id\": 5, \"prompt\": \"x\", \"completion\": \"yz\"}\n"
                               "{\"text\": \"t\", \"prompt\": \"p\"}");  // no final newline
  const TokenStream s = load_token_stream(path, jsonl_options(), &tok, 260);
  EXPECT_EQ(s.tokens, cat({{kByteBos}, byte_ids("ab"), {kByteEos},  //
                           {kByteBos}, byte_ids("Q:A"), {kByteEos},
                           {kByteBos}, byte_ids("xyz"), {kByteEos},
                           {kByteBos}, byte_ids("t"), {kByteEos}}));
  EXPECT_EQ(s.loss_mask, (Mask{1, 1, 1, 1,  //
                               0, 0, 0, 1, 1,
                               0, 0, 1, 1, 1,
                               1, 1, 1}));
}

TEST(DatasetJsonl, BosAndEosFollowTheOptions) {
  const TempDir dir("farthing-jsonl");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "d.jsonl", "{\"text\": \"\xC3\xA9\"}\n{\"prompt\": \"a\", \"response\": \"b\"}\n");
  DatasetOptions o = jsonl_options();
  o.add_bos = false;
  o.add_eos = false;
  const TokenStream s = load_token_stream(path, o, &tok, 260);
  EXPECT_EQ(s.tokens, (Ids{0xC3, 0xA9, 'a', 'b'}));
  EXPECT_EQ(s.loss_mask, (Mask{1, 1, 0, 1}));
  // Text fields never parse special tokens: "<s>" in data stays three bytes.
  const auto special = write_file(dir / "s.jsonl", "{\"text\": \"<s>\"}\n");
  EXPECT_EQ(load_token_stream(special, o, &tok, 260).tokens, byte_ids("<s>"));
}

TEST(DatasetJsonl, PackedTargetsIgnoreThePrompt) {
  const TempDir dir("farthing-jsonl");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "pr.jsonl",
                               "{\"prompt\": \"hi \", \"response\": \"yo\"}\n{\"prompt\": \"q\", \"response\": \"r\"}\n");
  DatasetOptions o = jsonl_options();
  o.seq_len = 10;
  o.eval_fraction = 0.0;
  o.packing = Packing::kStream;  // documents kept apart: test_document_packing.cpp
  // stream: <s> h i ␣ y o </s> <s> q r </s>  (11 tokens: one sequence of 10)
  const SplitData data = load_split_data(path, "", o, &tok, 260);
  ASSERT_EQ(data.train.size(), 1);
  EXPECT_EQ(data.eval.size(), 0);
  const Sequence seq = sequence_of(data.train, 0);
  EXPECT_EQ(seq.tokens, cat({{kByteBos}, byte_ids("hi yo"), {kByteEos, kByteBos, 'q', 'r'}}));
  const int32_t X = kIgnoreTarget;
  EXPECT_EQ(seq.targets, (Ids{X, X, X, 'y', 'o', kByteEos, X, X, 'r', kByteEos}));
  EXPECT_EQ(data.train.loss_tokens(), 5);
}

TEST(DatasetJsonl, MalformedLinesNameFileLineAndKeys) {
  const TempDir dir("farthing-jsonl");
  const Tokenizer tok(byte_tokenizer_spec());
  const DatasetOptions o = jsonl_options();
  auto load = [&](const std::string& name, const std::string& text) {
    const auto path = write_file(dir / name, text);
    return [&tok, &o, path] { load_token_stream(path, o, &tok, 260); };
  };
  const std::string ok = "{\"text\": \"fine\"}\n";
  expect_error(load("bad.jsonl", ok + "\n{\"text\": \"unterminated}\n"), {"bad.jsonl:3:", "not valid JSON", "\"text\""});
  expect_error(load("keys.jsonl", ok + "{\"content\": \"x\", \"id\": 1}\n"),
               {"keys.jsonl:2:", "none of the expected keys", "content, id", "\"prompt\" + \"response\"", "\"messages\""});
  expect_error(load("prompt.jsonl", "{\"prompt\": \"x\"}\n"), {"prompt.jsonl:1:", "no \"response\""});
  expect_error(load("type.jsonl", ok + ok + "{\"text\": 7}\n"), {"type.jsonl:3:", "\"text\" is number", "string"});
  expect_error(load("array.jsonl", "[1, 2]\n"), {"array.jsonl:1:", "not an object"});
  // A number past double's range is json::out_of_range, not a parse_error: it escaped without
  // file:line (tests/fuzz regression number-overflow-out-of-range.jsonl).
  expect_error(load("huge.jsonl", ok + "{\"text\": \"x\", \"id\": 4E444445}\n"), {"huge.jsonl:2:", "not valid JSON", "number overflow"});
  expect_error(load("msgs.jsonl", "{\"messages\": \"hi\"}\n"), {"msgs.jsonl:1:", "\"messages\" is string"});
  // Empty documents train on nothing: refused naming the line and the empty field.
  expect_error(load("empty_text.jsonl", ok + "{\"text\": \"\"}\n"),
               {"empty_text.jsonl:2:", "empty \"text\": an empty document"});
  expect_error(load("empty_response.jsonl", "{\"prompt\": \"Q\", \"response\": \"\"}\n"),
               {"empty_response.jsonl:1:", "empty \"response\": an empty document"});
  expect_error(load("empty_completion.jsonl", ok + ok + "{\"prompt\": \"Q\", \"completion\": \"\"}\n"),
               {"empty_completion.jsonl:3:", "empty \"completion\""});
  expect_error(load("role.jsonl", "{\"messages\": [{\"role\": \"user\"}]}\n"),
               {"role.jsonl:1:", "message 0", "{\"role\": string, \"content\": string}"});
  // An id the model cannot embed names the line and the position in its document.
  DatasetOptions no_ends = o;
  no_ends.add_bos = no_ends.add_eos = false;
  const auto vocab = write_file(dir / "vocab.jsonl", ok + "{\"text\": \"a\\u00ff\"}\n");  // ÿ = C3 BF
  expect_error([&] { load_token_stream(vocab, no_ends, &tok, 150); },
               {"vocab.jsonl:2", "token 1 has id 195", "vocab_size 150"});
  expect_error([&] { load_token_stream(vocab, o, &tok, 250); }, {"vocab.jsonl:1 (BOS)", "id 256", "vocab_size 250"});
}

}  // namespace

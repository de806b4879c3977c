// Fuzz target: a JSONL dataset (lines of "text", "prompt" + "response"/"completion", or chat
// "messages" rendered with ChatML), encoded by a byte tokenizer into a token stream. The stream
// must keep one loss-mask entry per token.
#include "framework/data/dataset_jsonl.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/byte_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "data.jsonl");
  fuzz::guarded([&] {
    data::DatasetOptions options;
    options.format = farthing::data::DataFormat::kJsonl;
    options.chat_template = "chatml";
    data::TokenStream stream;
    const data::Tokenizer& tokenizer = fuzz::byte_tokenizer();
    data::read_jsonl_documents(path, tokenizer, options, tokenizer.vocab_size(), stream);
    if (stream.loss_mask.size() != stream.tokens.size()) {
      std::fprintf(stderr, "fuzz: %zu tokens but %zu loss-mask entries\n", stream.tokens.size(), stream.loss_mask.size());
      std::abort();
    }
  });
  return 0;
}

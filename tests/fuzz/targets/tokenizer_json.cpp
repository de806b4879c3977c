// Fuzz target: an HF tokenizer.json (vocab, merges, added tokens, normalizer, pre-tokenizer and
// its Split regexes, post-processor), loaded and used to encode and decode.
#include "framework/data/tokenizer_loaders.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "tokenizer.json");
  fuzz::guarded([&] { fuzz::exercise_tokenizer(data::load_tokenizer(path)); });
  return 0;
}

// Fuzz target: a SentencePiece tokenizer.model (protobuf), loaded and used to encode and decode.
#include "framework/data/tokenizer_loaders.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "tokenizer.model");
  fuzz::guarded([&] { fuzz::exercise_tokenizer(data::load_tokenizer(path)); });
  return 0;
}

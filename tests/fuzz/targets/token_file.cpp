// Fuzz target: an FTOK token file (`farthing tokenize -o`), read directly and as a dataset.
#include "framework/data/token_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "data.tok");
  fuzz::guarded([&] { data::read_token_file(path); });
  return 0;
}

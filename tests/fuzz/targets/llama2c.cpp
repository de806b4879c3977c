// Fuzz target: a llama2.c .bin checkpoint, read eagerly and lazily (every tensor decoded).
#include <vector>

#include "framework/ckpt/llama2c.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = farthing::fuzz::input_file(data, size, "model.bin");
  farthing::fuzz::guarded([&] { farthing::ckpt::read_llama2c(path, false); });
  farthing::fuzz::guarded([&] {
    const farthing::ckpt::ModelFile model = farthing::ckpt::read_llama2c(path, true);
    std::vector<float> values;
    for (const auto& [name, t] : model.tensors) {
      values.resize(size_t(t.numel()));
      t.read(values.data());
    }
  });
  return 0;
}

// Fuzz target: a .safetensors file, read eagerly and lazily (every tensor decoded).
#include <vector>

#include "framework/ckpt/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = farthing::fuzz::input_file(data, size, "model.safetensors");
  farthing::fuzz::guarded([&] { farthing::ckpt::read_safetensors(path, false); });
  farthing::fuzz::guarded([&] {
    const farthing::ckpt::ModelFile model = farthing::ckpt::read_safetensors(path, true);
    std::vector<float> values;
    for (const auto& [name, t] : model.tensors) {
      values.resize(size_t(t.numel()));
      t.read(values.data());
    }
  });
  return 0;
}

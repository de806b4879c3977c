// Fuzz target: a .gguf file — the container (metadata, tensor infos), every supported tensor
// dequantized, the llama model mapping (names, q/k RoPE permutation) and the GGUF tokenizer.
#include <vector>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/gguf_model.h"
#include "framework/ckpt/gguf_quant.h"
#include "framework/data/tokenizer_loaders.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "model.gguf");
  fuzz::guarded([&] {
    const ckpt::GgufFile gguf(path);
    std::vector<float> values;
    for (const ckpt::GgufTensorInfo& info : gguf.tensors()) {
      if (!ckpt::ggml_type_supported(info.type)) continue;
      values.resize(size_t(info.n_elems));
      gguf.dequantize(info, values.data());
    }
    fuzz::guarded([&] { fuzz::exercise_tokenizer(data::Tokenizer(data::gguf_tokenizer_spec(gguf))); });
  });
  fuzz::guarded([&] { ckpt::read_gguf_model(path, false); });
  return 0;
}

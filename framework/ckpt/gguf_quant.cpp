// gguf_quant.cpp — see gguf_quant.h. Block layouts follow ggml-common.h exactly.
#include "framework/ckpt/gguf_quant.h"

#include <cstring>

#include "framework/core/error.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::ckpt {

namespace {
constexpr uint64_t kQK = 32;  // elements per block of the legacy quant types

float half_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return numerics::fp16_to_f32(bits);
}

struct TypeInfo {
  uint64_t block_elems;
  uint64_t block_bytes;
};

bool info_of(uint32_t type, TypeInfo& info) {
  switch (GgmlType(type)) {
    case GgmlType::kF32: info = {1, 4}; return true;
    case GgmlType::kF16: info = {1, 2}; return true;
    case GgmlType::kBF16: info = {1, 2}; return true;
    case GgmlType::kQ4_0: info = {kQK, 2 + kQK / 2}; return true;
    case GgmlType::kQ4_1: info = {kQK, 4 + kQK / 2}; return true;
    case GgmlType::kQ5_0: info = {kQK, 2 + 4 + kQK / 2}; return true;
    case GgmlType::kQ5_1: info = {kQK, 4 + 4 + kQK / 2}; return true;
    case GgmlType::kQ8_0: info = {kQK, 2 + kQK}; return true;
  }
  return false;
}
}  // namespace

std::string ggml_type_name(uint32_t type) {
  static const char* const kNames[] = {
      "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K",
      "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
      "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16"};
  if (type < sizeof(kNames) / sizeof(kNames[0])) return kNames[type];
  return "type " + std::to_string(type);
}

bool ggml_type_supported(uint32_t type) {
  TypeInfo info{};
  return info_of(type, info);
}

uint64_t ggml_block_elems(uint32_t type) {
  TypeInfo info{};
  FARTHING_CHECK(info_of(type, info), "ggml type ", ggml_type_name(type), " (", type, ") is not supported");
  return info.block_elems;
}

uint64_t ggml_type_bytes(uint32_t type, uint64_t n_elems) {
  TypeInfo info{};
  FARTHING_CHECK(info_of(type, info), "ggml type ", ggml_type_name(type), " (", type,
                 ") is not supported; supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0");
  FARTHING_CHECK(n_elems % info.block_elems == 0, n_elems, " elements of ", ggml_type_name(type),
                 " are not a whole number of ", info.block_elems, "-element blocks");
  return n_elems / info.block_elems * info.block_bytes;
}

void ggml_dequantize(uint32_t type, const uint8_t* src, float* dst, uint64_t n) {
  const uint64_t bytes = ggml_type_bytes(type, n);
  (void)bytes;
  switch (GgmlType(type)) {
    case GgmlType::kF32:
      if (n > 0) std::memcpy(dst, src, n * 4);  // n == 0: the pointers may be null (memcpy UB)
      return;
    case GgmlType::kF16:
      for (uint64_t i = 0; i < n; ++i) dst[i] = half_at(src + 2 * i);
      return;
    case GgmlType::kBF16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = numerics::bf16_to_f32(bits);
      }
      return;
    case GgmlType::kQ4_0:  // { half d; uint8 qs[16]; }  x = (q - 8) * d, low nibbles first
      for (uint64_t b = 0; b < n / kQK; ++b, src += 18, dst += kQK) {
        const float d = half_at(src);
        const uint8_t* qs = src + 2;
        for (uint64_t j = 0; j < kQK / 2; ++j) {
          dst[j] = float(int(qs[j] & 0x0F) - 8) * d;
          dst[j + kQK / 2] = float(int(qs[j] >> 4) - 8) * d;
        }
      }
      return;
    case GgmlType::kQ4_1:  // { half d; half m; uint8 qs[16]; }  x = q * d + m
      for (uint64_t b = 0; b < n / kQK; ++b, src += 20, dst += kQK) {
        const float d = half_at(src), m = half_at(src + 2);
        const uint8_t* qs = src + 4;
        for (uint64_t j = 0; j < kQK / 2; ++j) {
          dst[j] = float(qs[j] & 0x0F) * d + m;
          dst[j + kQK / 2] = float(qs[j] >> 4) * d + m;
        }
      }
      return;
    case GgmlType::kQ5_0:  // { half d; uint8 qh[4]; uint8 qs[16]; }  x = (q5 - 16) * d
    case GgmlType::kQ5_1: {  // { half d; half m; uint8 qh[4]; uint8 qs[16]; }  x = q5 * d + m
      const bool with_min = GgmlType(type) == GgmlType::kQ5_1;
      const uint64_t block_bytes = with_min ? 24 : 22;
      for (uint64_t b = 0; b < n / kQK; ++b, src += block_bytes, dst += kQK) {
        const float d = half_at(src), m = with_min ? half_at(src + 2) : 0.0f;
        const uint8_t* qh_bytes = src + (with_min ? 4 : 2);
        uint32_t qh;
        std::memcpy(&qh, qh_bytes, 4);
        const uint8_t* qs = qh_bytes + 4;
        for (uint64_t j = 0; j < kQK / 2; ++j) {
          const int high0 = int(((qh >> j) << 4) & 0x10);
          const int high1 = int((qh >> (j + 12)) & 0x10);
          const int q0 = int(qs[j] & 0x0F) | high0, q1 = int(qs[j] >> 4) | high1;
          if (with_min) {
            dst[j] = float(q0) * d + m;
            dst[j + kQK / 2] = float(q1) * d + m;
          } else {
            dst[j] = float(q0 - 16) * d;
            dst[j + kQK / 2] = float(q1 - 16) * d;
          }
        }
      }
      return;
    }
    case GgmlType::kQ8_0:  // { half d; int8 qs[32]; }  x = q * d
      for (uint64_t b = 0; b < n / kQK; ++b, src += 34, dst += kQK) {
        const float d = half_at(src);
        const auto* qs = reinterpret_cast<const int8_t*>(src + 2);
        for (uint64_t j = 0; j < kQK; ++j) dst[j] = float(qs[j]) * d;
      }
      return;
  }
  FARTHING_FAIL("ggml type ", ggml_type_name(type), " (", type, ") is not supported");
}

}  // namespace farthing::ckpt

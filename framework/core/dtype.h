// dtype.h — the run-time element type, and the switch that turns it into a C++ type.
//
// Precision is a run-time choice (one binary covers fp32/bf16/fp16/fp8), so every kernel
// that depends on it goes through dispatch_dtype() instead of a compile-time typedef.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "framework/core/error.h"

namespace farthing {

enum class DType : uint8_t { kF32, kBF16, kF16, kE4M3, kE5M2, kU8, kI32, kI64, kF64 };

// Storage types for the narrow floats: their bit patterns, never arithmetic types.
struct Bf16Bits { uint16_t bits; };
struct Fp16Bits { uint16_t bits; };
struct E4M3Bits { uint8_t bits; };
struct E5M2Bits { uint8_t bits; };
static_assert(sizeof(Bf16Bits) == 2 && sizeof(Fp16Bits) == 2);
static_assert(sizeof(E4M3Bits) == 1 && sizeof(E5M2Bits) == 1);

constexpr size_t dtype_size_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kE4M3: return 1;
    case DType::kE5M2: return 1;
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kF64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kE4M3: return "e4m3";
    case DType::kE5M2: return "e5m2";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF64: return "f64";
  }
  return "?";
}

// Parses "f32", "bf16", ... as written in recipes; throws naming the accepted spellings.
DType parse_dtype(std::string_view name);

template <class T> struct TypeTag { using type = T; };

// Calls fn(TypeTag<T>{}) with T the storage type of dtype.
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32: return fn(TypeTag<float>{});
    case DType::kBF16: return fn(TypeTag<Bf16Bits>{});
    case DType::kF16: return fn(TypeTag<Fp16Bits>{});
    case DType::kE4M3: return fn(TypeTag<E4M3Bits>{});
    case DType::kE5M2: return fn(TypeTag<E5M2Bits>{});
    case DType::kU8: return fn(TypeTag<uint8_t>{});
    case DType::kI32: return fn(TypeTag<int32_t>{});
    case DType::kI64: return fn(TypeTag<int64_t>{});
    case DType::kF64: return fn(TypeTag<double>{});
  }
  FARTHING_FAIL("dispatch_dtype: unknown dtype code ", int(dtype));
}

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kF32; }
template <> constexpr DType dtype_of<Bf16Bits>() { return DType::kBF16; }
template <> constexpr DType dtype_of<Fp16Bits>() { return DType::kF16; }
template <> constexpr DType dtype_of<E4M3Bits>() { return DType::kE4M3; }
template <> constexpr DType dtype_of<E5M2Bits>() { return DType::kE5M2; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kU8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kI32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kI64; }
template <> constexpr DType dtype_of<double>() { return DType::kF64; }

}  // namespace farthing

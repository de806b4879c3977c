// dtype.cpp — dtype names as recipes spell them.
#include "framework/core/dtype.h"

namespace farthing {

DType parse_dtype(std::string_view name) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kE4M3, DType::kE5M2, DType::kU8,
                  DType::kI32, DType::kI64, DType::kF64}) {
    if (dtype_name(d) == name) return d;
  }
  FARTHING_FAIL("unknown dtype '", name,
                "': expected one of f32, bf16, f16, e4m3, e5m2, u8, i32, i64, f64");
}

}  // namespace farthing

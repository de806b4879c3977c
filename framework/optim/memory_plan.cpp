// memory_plan.cpp — see memory_plan.h.
#include "framework/optim/memory_plan.h"

#include "kernels/numerics/block_quant4.h"

namespace farthing::optim {

BytesPerParam bytes_per_param(StateFormat state, MasterMode master, DType weight_dtype, DType grad_dtype) {
  BytesPerParam b;
  b.weights = double(dtype_size_bytes(weight_dtype));
  b.grads = double(dtype_size_bytes(grad_dtype));
  b.master = master == MasterMode::kF32 ? 4.0 : master == MasterMode::kRemainder16 ? 2.0 : 0.0;
  switch (state) {
    case StateFormat::kF32: b.moments = 8.0; break;
    case StateFormat::kBf16: b.moments = 4.0; break;
    case StateFormat::kBlock8: b.moments = 2.0 * (1.0 + 4.0 / double(kQuantBlockElems)); break;
    case StateFormat::kBlock4: b.moments = 2.0 * (0.5 + 4.0 / double(numerics::kQuant4BlockElems)); break;
  }
  return b;
}

}  // namespace farthing::optim

// matmul_add_product.cpp — NnOps::matmul_add_product's default (nn_ops.h): the product into a
// scratch C of the op's own device, then added to C, so any backend without a staged or
// epilogue form of its own still adds each product whole. The CPU and CUDA sets override it
// without the scratch.
// Relies on: nn_ops.h, buffer.h. Tested by: tests/kernels/test_matmul_cpu.cpp (the CPU's form).
#include "framework/backend/buffer.h"
#include "framework/backend/nn_ops.h"
#include "framework/core/error.h"

namespace farthing {

void NnOps::matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) {
  FARTHING_CHECK(shape.ldc == 0 || shape.ldc == shape.n, "matmul_add_product: the default form needs a dense C (ldc ",
                 shape.ldc, ", n ", shape.n, ")");
  if (shape.m == 0 || shape.n == 0) return;
  Buffer product(device(), size_t(shape.m * shape.n) * 4, MemoryCategory::kActivations);
  auto* p = static_cast<float*>(product.data());
  matmul(dtype, shape, a, b, p, false);
  accumulate(c, p, shape.m * shape.n);
}

}  // namespace farthing

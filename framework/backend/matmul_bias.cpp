// matmul_bias.cpp — the defaults of NnOps' linear layers with a bias (nn_ops.h): the GEMM, then
// the bias's own op. They are the CPU's (and the strict device's) forms, the reference the CUDA
// set's cuBLASLt epilogues are held to within the GEMM tolerance.
// Relies on: nn_ops.h. Tested by: tests/kernels/test_nn_ops_parity.cpp (matmul_bias_*,
// matmul_bias_grad_* rows), tests/models/test_model_modes.cpp.
#include "framework/backend/nn_ops.h"

namespace farthing {

void NnOps::matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                        float* c, bool accumulate) {
  matmul(dtype, shape, a, b, c, accumulate);
  bias_add(c, bias, shape.m, shape.n, shape.ldc == 0 ? shape.n : shape.ldc);
}

void NnOps::matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                             GradInto into, BiasGradOf side, ActRef dy, float* dbias) {
  if (into == GradInto::kAddProduct) {
    matmul_add_product(dtype, shape, a, b, c);
  } else {
    matmul(dtype, shape, a, b, c, into == GradInto::kAccumulate);
  }
  const int64_t width = side == BiasGradOf::kA ? shape.m : shape.n;
  bias_backward(dbias, dy, shape.k, width, width);
}

}  // namespace farthing

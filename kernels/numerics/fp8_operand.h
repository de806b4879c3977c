// fp8_operand.h — the argument structs of the FP8 kernels, shared by every backend (CPU
// emulation: kernels/cpu/fp8_cpu.h; CUDA: kernels/cuda/fp8_cuda.h) and by the backend
// interface (framework/backend/nn_ops.h). Plain data, no maths: the maths is fp8_scaling.h.
// Relies on: fp8_scaling.h. Used by: kernels/cpu/fp8_cpu.h, framework/backend/nn_ops.h.
#pragma once

#include <cstdint>

#include "kernels/numerics/fp8_scaling.h"

namespace farthing::kernels {

using numerics::Fp8Format;
using numerics::Fp8Tiling;

// A quantized row-major (rows, cols) matrix as a GEMM reads it: codes, and one s_inv per tile
// (fp8_scale_count(tiling, rows, cols) floats, row-major over the tiles). Device memory.
struct Fp8Operand {
  const uint8_t* codes = nullptr;
  const float* scale_inv = nullptr;
  int64_t rows = 0, cols = 0;
  Fp8Tiling tiling = Fp8Tiling::kTensor;
  Fp8Format format = Fp8Format::kE4M3;
  // Every scale a power of two: the dequantized values are exact in bf16 (the CPU emulation
  // then multiplies in bf16 with fp32 accumulation, else in fp32).
  bool power_of_two = true;
};

// Quantize a row-major (rows, cols) matrix, read from fp32 or from bf16 (exactly widened).
// Current scaling (given_scale == nullptr): each tile's scale from its own amax, with the
// margin and power-of-two rule of fp8_scale_from_amax. Delayed scaling: one given scale (device
// memory, tiling kTensor). Writes the codes, each tile's s_inv, and, when amax != nullptr, folds
// the amax of the whole matrix into *amax (one float in the ops' memory: the NaN-dominant max of
// the value there and every tile's amax; zero it first for this matrix's alone). Folding lets
// delayed scaling gather a whole step's amaxes on the device and read them back once.
struct Fp8QuantizeArgs {
  const float* x_f32 = nullptr;     // exactly one of x_f32 / x_bf16
  const uint16_t* x_bf16 = nullptr;
  int64_t rows = 0, cols = 0;
  Fp8Tiling tiling = Fp8Tiling::kTensor;
  Fp8Format format = Fp8Format::kE4M3;
  int margin = 0;
  bool power_of_two = true;
  const float* given_scale = nullptr;
  uint8_t* codes = nullptr;         // rows * cols
  float* scale_inv = nullptr;       // fp8_scale_count(tiling, rows, cols)
  float* amax = nullptr;            // optional, one float: folded into (see above)
};

}  // namespace farthing::kernels

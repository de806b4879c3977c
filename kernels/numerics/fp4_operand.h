// fp4_operand.h — the argument structs of the FP4 kernels (CPU emulation: kernels/cpu/fp4_cpu.h),
// shared with the backend interface (framework/backend/nn_ops.h). Plain data; the maths of one
// block is fp4_block.h, of the Hadamard transform hadamard.h.
//
// An FP4 operand is always stored the way block-scaled FP4 GEMMs read it (cuBLASLt's VEC16/VEC32
// modes are TN only): (rows, cols) row-major with cols the GEMM's reduced dimension, one E2M1 code
// per byte, and one scale code per (row, block of `block` columns). 2D weight scaling (NVFP4's
// 16x16) gives every row of a block x block tile the same scale; the layout stays the 1D one.
// NOTE: code and scale buffers are padded to a multiple of 4 bytes: NnOps' host emulation of a
// device (framework/backend/fp4_host_emulation.cpp) copies them as whole floats.
// Relies on: stochastic_round.h. Used by: kernels/cpu/fp4_cpu.h, framework/backend/nn_ops.h.
#pragma once

#include <cstdint>

#include "kernels/numerics/host_device.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

// The block scale: E4M3 with an fp32 per-tensor scale (NVFP4), or E8M0 (MXFP4).
enum class Fp4Scale : uint8_t { kE4M3, kE8M0 };

FARTHING_HD int64_t fp4_blocks_per_row(int64_t cols, int block) { return (cols + block - 1) / block; }

struct Fp4Operand {
  const uint8_t* codes = nullptr;   // rows * cols
  const uint8_t* scales = nullptr;  // rows * fp4_blocks_per_row(cols, block)
  const float* decode_scale = nullptr;  // one float: s_dec (E4M3), 1 (E8M0)
  int64_t rows = 0, cols = 0;
  int block = 16;
  Fp4Scale scale = Fp4Scale::kE4M3;
};

// Quantize the (rows, cols) operand, read from fp32 or bf16 (exactly widened). transposed: the
// source is stored (cols, rows) row-major, and the operand is its transpose. Then, in order:
//   1. rht_size > 0: each row's full chunks of rht_size columns get the random Hadamard transform
//      with rht_signs (rht_size floats, ±1); a short tail chunk is left as it is (still orthogonal);
//   2. the E4M3 scale's tensor scale from the amax of the whole (transformed) operand;
//   3. block scales over 1 x block (block_2d: block x block tiles), elements rounded to nearest
//      even, or stochastically with element (r, c)'s bits at index first_index + r * cols + c;
//      with sr_prescale (E8M0 only, Tseng et al.'s 3/4), each element is encoded with 3/4 of its
//      block's multiplier and the decode scale is 4/3 (fp4_scale_rules.h).
// workspace: rows * cols floats (the operand as fp32 before its cast).
struct Fp4QuantizeArgs {
  const float* x_f32 = nullptr;  // exactly one of x_f32 / x_bf16
  const uint16_t* x_bf16 = nullptr;
  int64_t rows = 0, cols = 0;
  bool transposed = false;
  int block = 16;
  Fp4Scale scale = Fp4Scale::kE4M3;
  bool block_2d = false;
  int rht_size = 0;
  const float* rht_signs = nullptr;
  bool stochastic = false;
  bool sr_prescale = false;
  numerics::RandomKey key{};
  uint64_t first_index = 0;
  uint8_t* codes = nullptr;
  uint8_t* scales = nullptr;
  float* decode_scale = nullptr;
  float* workspace = nullptr;
};

}  // namespace farthing::kernels

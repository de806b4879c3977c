// fp4_cuda.h — FP4 quantization (NVFP4, MXFP4) and the pieces of the FP4 GEMM on a CUDA device:
// the same codes, scales and tensor scale as kernels/cpu/fp4_cpu.h, bit for bit, queued on a
// stream.
//
// Every scalar step is a kernels/numerics call (fp4_block.h, fp4_scale_rules.h, hadamard.h); the
// kernels only decide which thread handles what. The library is built without fast-math or
// contraction (FARTHING_CUDA_NUMERICS_FLAGS). Amaxes are maxima of |x| bit patterns, exact in any
// order; each Hadamard chunk is one thread's butterflies in hadamard.h's fixed order.
// Quantization, in fp4_operand.h's order, one pass each:
//   1. gather: the operand as fp32 into the caller's workspace (through the transpose, widened);
//   2. the random Hadamard transform of each row's full chunks, in place (a thread a chunk);
//   3. E4M3 only: the tensor's amax (warp maxima, an unsigned atomicMax);
//   4. block scales: a thread per 1 x block block, or per block x block tile (2D);
//   5. elements: a thread each, rounded to nearest even or stochastically (Philox keyed by the
//      element's index, stochastic_round.h); thread 0 writes the tensor's decode scale.
// Relies on: kernels/numerics/fp4_*.h, hadamard.h, bf16.h, cuda_check.h.
// Tested by: tests/kernels/test_nn_ops_parity.cpp (fp4 rows: codes, scales and the decode scale
// bitwise against the CPU; the packed and tiled GEMM operands against fp4_lt_layout.h; skips
// without a GPU; runs under the GPU simulator, tools/gpu/sim_check.sh).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/fp4_operand.h"

namespace farthing::kernels {

// Device scratch fp4_quantize_cuda needs: 4 bytes (the tensor's amax bits).
inline constexpr int64_t kFp4QuantizeScratchBytes = 4;

// Queues the quantization that fp4_operand.h describes. Arguments already checked
// (framework/backend/fp4_op_checks.h); scratch: kFp4QuantizeScratchBytes of device memory.
void fp4_quantize_cuda(const Fp4QuantizeArgs& args, void* scratch, cudaStream_t stream);

// out = bf16(e2m1 · block scale) for every element of x, without the tensor scale: exact (what
// the emulated GEMM multiplies; kernels/cpu/fp4_cpu.cpp does the same).
void fp4_dequantize_unscaled_bf16_cuda(const Fp4Operand& x, uint16_t* out, cudaStream_t stream);

// c = fp4_gemm_output(c, s_dec(A) · s_dec(B), product, accumulate) over count elements: the FP4
// GEMM's per-tensor scales applied to the product of the unscaled operands.
void fp4_gemm_epilogue_cuda(float* c, const float* product, const float* a_decode_scale, const float* b_decode_scale,
                            int64_t count, bool accumulate, cudaStream_t stream);

// cuBLASLt's FP4 operand layout (kernels/numerics/fp4_lt_layout.h): codes packed two to a byte
// (count even), and the (rows, blocks) scales tiled into fp4_lt_scale_bytes(rows, blocks) bytes,
// the padding zero.
void fp4_pack_codes_cuda(const uint8_t* codes, int64_t count, uint8_t* packed, cudaStream_t stream);
void fp4_tile_scales_cuda(const uint8_t* scales, int64_t rows, int64_t blocks, uint8_t* tiled, cudaStream_t stream);

}  // namespace farthing::kernels

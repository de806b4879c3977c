// fp8_cuda.h — FP8 quantization and dequantization on a CUDA device: the same tiles, scales
// and codes as kernels/cpu/fp8_cpu.h, bit for bit, queued on a stream.
//
// Each kernel calls kernels/numerics/fp8_scaling.h for every scalar step (ordered |x| bits, the
// scale from the amax, s_inv, the cast) and adds no arithmetic of its own; the library is built
// without fast-math or contraction (FARTHING_CUDA_NUMERICS_FLAGS), so codes and s_inv equal the
// CPU's. Amaxes are maxima of unsigned bit patterns: a warp or block reduction of those, or an
// unsigned atomicMax, gives the same value in any order (no float atomics anywhere).
//   kRow1x128, kCol128x1, kBlock128: one fused kernel — each tile's amax, its scale and the cast
//     in one launch (a warp per 1 x 128 tile, a thread per 128 x 1 column tile, a block per
//     128 x 128 tile).
//   kTensor with current scaling: two passes, necessarily — no element can be cast before the
//     amax of the whole tensor is known (pass 1: amax; pass 2: scale and cast).
//   kTensor with a given (delayed) scale: one pass (cast and amax together) and a one-thread
//     kernel that writes s_inv and the amax.
// The matrix's amax, when asked for, is an atomicMax of tile amax bits into *amax (zeroed first).
// Relies on: kernels/numerics/fp8_operand.h, fp8_scaling.h, bf16.h, cuda_check.h.
// Tested by: tests/kernels/test_nn_ops_parity.cpp (fp8_quantize rows: codes, s_inv and amax
// bitwise against the CPU; skips without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/numerics/fp8_operand.h"

namespace farthing::kernels {

// Device scratch fp8_quantize_cuda needs (4 bytes for kTensor's amax, else none).
size_t fp8_quantize_scratch_bytes(const Fp8QuantizeArgs& args);

// Queues the quantization that fp8_operand.h describes. Arguments already checked
// (framework/backend/fp8_op_checks.h); scratch: fp8_quantize_scratch_bytes(args) bytes.
void fp8_quantize_cuda(const Fp8QuantizeArgs& args, void* scratch, cudaStream_t stream);

// out = q * s_inv for every element of x as stored: fp32, or bf16 (round to nearest even; exact
// when x.power_of_two). What the CPU emulation computes before its dense GEMM.
void fp8_dequantize_f32_cuda(const Fp8Operand& x, float* out, cudaStream_t stream);
void fp8_dequantize_bf16_cuda(const Fp8Operand& x, uint16_t* out, cudaStream_t stream);

// dst (cols, rows) = src (rows, cols)ᵀ for a row-major matrix of bytes (FP8 codes).
void fp8_transpose_codes_cuda(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, cudaStream_t stream);

// dst[o * dst_o + k * dst_k] = src[o * src_o + k * src_k] for o < outer, k < inner: the scale
// rearrangements cuBLASLt's block-scaling layouts need (kernels/cuda/gemm_fp8_cublaslt.h).
void fp8_copy_scales_cuda(const float* src, int64_t src_o, int64_t src_k, float* dst, int64_t dst_o, int64_t dst_k,
                          int64_t outer, int64_t inner, cudaStream_t stream);

}  // namespace farthing::kernels

// fp4_lt_layout.h — how cuBLASLt's block-scaled FP4 GEMMs (CUDA_R_4F_E2M1 operands with
// CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 or VEC32_UE8M0 scales, sm_100 and later) want an
// operand that fp4_operand.h stores one code per byte with row-major scales.
//   Codes: two per byte along the reduced dimension, the even column in the low nibble (the
//     layout of CUDA's __nv_fp4x2_e2m1, element 0 in bits 0-3).
//   Scales: the cuBLAS documentation's "1D block scaling factors layout". The (rows, blocks)
//     scale matrix is padded with zeros to whole 128 x 4 tiles; tiles are stored one after
//     another, the block (K) tile index fastest, 512 bytes each; inside a tile, scale (r, b)
//     sits at (r % 32) * 16 + (r / 32) * 4 + b (r < 128, b < 4): the four 32-row quarters of a
//     column of four scales interleaved, so one 16-byte load holds a row's four scales for each
//     quarter.
// Relies on: host_device.h. Tested by: tests/numerics/test_fp4_lt_layout.cpp (against the
// reshape-and-permute form the layout is usually written in).
#pragma once

#include <cstdint>

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

inline constexpr int64_t kFp4LtTileRows = 128, kFp4LtTileBlocks = 4, kFp4LtTileBytes = 512;

FARTHING_HD int64_t fp4_lt_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Bytes of the padded, tiled scales of an operand with `rows` rows of `blocks` scales each.
FARTHING_HD int64_t fp4_lt_scale_bytes(int64_t rows, int64_t blocks) {
  return fp4_lt_round_up(rows, kFp4LtTileRows) * fp4_lt_round_up(blocks, kFp4LtTileBlocks);
}

// Where scale (r, b) of an operand with `blocks` scales a row goes.
FARTHING_HD int64_t fp4_lt_scale_offset(int64_t r, int64_t b, int64_t blocks) {
  const int64_t tiles_per_row = fp4_lt_round_up(blocks, kFp4LtTileBlocks) / kFp4LtTileBlocks;
  const int64_t tile = (r / kFp4LtTileRows) * tiles_per_row + b / kFp4LtTileBlocks;
  const int64_t rr = r % kFp4LtTileRows;
  return tile * kFp4LtTileBytes + (rr % 32) * 16 + (rr / 32) * 4 + b % kFp4LtTileBlocks;
}

// Byte j of a packed row: columns 2j (low nibble) and 2j + 1 (high nibble).
FARTHING_HD uint8_t fp4_lt_pack_pair(uint8_t even, uint8_t odd) { return uint8_t((even & 0xFu) | ((odd & 0xFu) << 4)); }

}  // namespace farthing::numerics

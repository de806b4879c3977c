// test_fp4_lt_layout.cpp — cuBLASLt's FP4 operand layout (kernels/numerics/fp4_lt_layout.h) and the
// FP4 GEMM workspace (fp4_workspace.h).
//
// 1. The scale offsets against the form the layout is written in elsewhere (PyTorch's and
//    Transformer Engine's "to_blocked"): pad the (rows, blocks) matrix to whole 128 x 4 tiles,
//    view it as (row tiles, 128, block tiles, 4), permute to (row tiles, block tiles, 128, 4),
//    view each tile's 128 rows as (4, 32), swap those two, flatten. Done here with explicit index
//    arithmetic over those views, not with the header's formula.
// 2. The offsets are a bijection onto [0, fp4_lt_scale_bytes) for ragged shapes, and tiles of 512
//    bytes follow each other with the block tile index fastest.
// 3. Packing puts the even column in the low nibble.
// 4. The cuBLASLt engine's workspace holds both of its layouts; the emulated one is the CPU's.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/numerics/fp4_lt_layout.h"
#include "kernels/numerics/fp4_workspace.h"

namespace farthing::numerics {
namespace {

// to_blocked's flat position of scale (r, b), by walking its views in order.
int64_t to_blocked_offset(int64_t r, int64_t b, int64_t rows, int64_t blocks) {
  const int64_t row_tiles = (rows + 127) / 128, block_tiles = (blocks + 3) / 4;
  // View 1: (row_tiles, 128, block_tiles, 4) of the padded matrix.
  const int64_t i0 = r / 128, i1 = r % 128, i2 = b / 4, i3 = b % 4;
  // permute(0, 2, 1, 3): (row_tiles, block_tiles, 128, 4); flat index of (i0, i2, i1, i3).
  const int64_t flat = ((i0 * block_tiles + i2) * 128 + i1) * 4 + i3;
  // reshape(-1, 4, 32, 4): (tiles, q, j, c) with flat = ((tile * 4 + q) * 32 + j) * 4 + c.
  const int64_t c = flat % 4, j = (flat / 4) % 32, q = (flat / 128) % 4, tile = flat / 512;
  // transpose(1, 2): (tiles, 32, 4, 4); flat index of (tile, j, q, c).
  EXPECT_LT(tile, row_tiles * block_tiles);
  return ((tile * 32 + j) * 4 + q) * 4 + c;
}

TEST(Fp4LtLayout, ScaleOffsetsAreToBlocked) {
  for (const auto& [rows, blocks] : {std::pair<int64_t, int64_t>{128, 4}, {256, 8}, {130, 13}, {1, 1}, {300, 36}}) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < blocks; ++b) {
        ASSERT_EQ(fp4_lt_scale_offset(r, b, blocks), to_blocked_offset(r, b, rows, blocks))
            << "rows " << rows << " blocks " << blocks << " at (" << r << ", " << b << ")";
      }
    }
  }
}

TEST(Fp4LtLayout, PaddedOffsetsCoverTheTilesOnce) {
  for (const auto& [rows, blocks] : {std::pair<int64_t, int64_t>{130, 13}, {5, 2}, {257, 9}}) {
    const int64_t bytes = fp4_lt_scale_bytes(rows, blocks);
    EXPECT_EQ(bytes, ((rows + 127) / 128) * 128 * ((blocks + 3) / 4) * 4);
    std::vector<int> hits(size_t(bytes), 0);
    for (int64_t r = 0; r < fp4_lt_round_up(rows, 128); ++r) {
      for (int64_t b = 0; b < fp4_lt_round_up(blocks, 4); ++b) ++hits[size_t(fp4_lt_scale_offset(r, b, blocks))];
    }
    for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(hits[size_t(i)], 1) << "offset " << i;
  }
  // The second block tile of the first row tile starts at byte 512; the second row tile after all
  // of the first's block tiles.
  EXPECT_EQ(fp4_lt_scale_offset(0, 4, 9), 512);
  EXPECT_EQ(fp4_lt_scale_offset(128, 0, 9), 3 * 512);
  EXPECT_EQ(fp4_lt_scale_offset(32, 0, 9), 4);   // the second quarter of rows: 4 bytes in
  EXPECT_EQ(fp4_lt_scale_offset(1, 0, 9), 16);   // the next row of a quarter: 16 bytes on
}

TEST(Fp4LtLayout, PacksTheEvenColumnLow) {
  EXPECT_EQ(fp4_lt_pack_pair(0x1, 0xE), 0xE1);
  EXPECT_EQ(fp4_lt_pack_pair(0xF7, 0x38), 0x87);  // bits above the code are dropped
}

TEST(Fp4Workspace, CublasLtEngineHoldsBothLayouts) {
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 32}, {256, 512, 384}, {130, 200, 200}}) {
    for (int block : {16, 32}) {
      const int64_t blocks = (k + block - 1) / block;
      const auto up = [](int64_t x) { return fp4_lt_round_up(x, kFp4LtAlign); };
      const int64_t lt = up(m * n * 4) + kFp4LtScratchBytes + up((m * k + 1) / 2) + up((n * k + 1) / 2) +
                         up(fp4_lt_scale_bytes(m, blocks)) + fp4_lt_scale_bytes(n, blocks);
      const int64_t emulated_aligned = up(m * k * 2) + up(n * k * 2) + m * n * 4;
      const int64_t bytes = fp4_matmul_workspace_bytes(Fp4GemmEngine::kCublasLt, m, n, k, block);
      EXPECT_GE(bytes, lt);
      EXPECT_GE(bytes, emulated_aligned);
      EXPECT_EQ(fp4_matmul_workspace_bytes(Fp4GemmEngine::kEmulated, m, n, k, block), (m * k + n * k) * 2 + m * n * 4);
    }
  }
}

}  // namespace
}  // namespace farthing::numerics

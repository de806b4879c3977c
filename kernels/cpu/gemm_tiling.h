// gemm_tiling.h — how a CPU GEMM's output is cut into tiles, each computed whole (its entire K
// reduction) by one thread.
//
// Why: oneDNN splits a GEMM's reduction over K between threads on some processors (its AVX2
// sgemm does), so the bits of C depended on the thread count, and np=N (fewer threads per rank)
// differed from np=1. A tile's shape here is a function of the problem (m, n, k) alone, never of
// the thread count; each tile runs through a single-threaded primitive, and the tiles are spread
// over the threads. So C has the same bits at any thread count and any world size (on a given
// ISA: oneDNN's AVX2, AVX-512 and AMX kernels still round differently from each other).
// Relies on: nothing (pure arithmetic). Tested by: tests/kernels/test_matmul_cpu.cpp.
#pragma once

#include <algorithm>
#include <cstdint>

namespace farthing::kernels {

struct GemmTiling {
  int64_t tile_m = 0, tile_n = 0;  // rows and columns of C per tile (the last tiles may be short)
  int64_t tiles_m = 0, tiles_n = 0;
  int64_t count() const { return tiles_m * tiles_n; }
};

// NOTE: the constants trade the packing each tile repeats (large tiles) against threads left idle
// (few tiles). 256 x 256 tiles keep oneDNN's microkernels at full speed; a GEMM with fewer than
// kEnoughTiles tiles halves its tiles (the longer side first, never below 64) while each tile keeps
// at least kMinTileMacs multiply-adds, so up to ~32 threads find work without tiny tiles.
// Changing any constant changes the CPU's GEMM bits (as a new ISA would): keep them fixed.
inline GemmTiling gemm_tiling(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kTileMax = 256, kTileMin = 64, kEnoughTiles = 32, kMinTileMacs = int64_t(1) << 21;
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t tm = std::min(m, kTileMax), tn = std::min(n, kTileMax);
  for (int i = 0; i < 8 && ceil_div(m, tm) * ceil_div(n, tn) < kEnoughTiles; ++i) {
    const bool halve_n = tn >= tm;
    const int64_t half = (halve_n ? tn : tm) / 2;
    if (half < kTileMin) break;
    const int64_t macs = (halve_n ? tm * half : half * tn) * k;
    if (macs < kMinTileMacs) break;
    (halve_n ? tn : tm) = half;
  }
  return GemmTiling{tm, tn, ceil_div(m, tm), ceil_div(n, tn)};
}

}  // namespace farthing::kernels

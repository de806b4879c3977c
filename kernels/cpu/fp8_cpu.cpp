// fp8_cpu.cpp — see fp8_cpu.h.
#include "kernels/cpu/fp8_cpu.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/bf16.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

// Rows that share a tile row: one for 1 x 128 tiles, 128 for 128 x 1 and 128 x 128 tiles (and
// all of them per tensor).
int64_t rows_per_band(Fp8Tiling tiling, int64_t rows) {
  return tiling == Fp8Tiling::kTensor ? rows : tiling == Fp8Tiling::kRow1x128 ? 1 : nm::kFp8TileEdge;
}

// Columns that share a scale along a row: 128 (1 x 128, 128 x 128), one (128 x 1: a scale per
// column), or the whole row (per tensor). Loops run over these segments with the scale hoisted.
int64_t cols_per_segment(Fp8Tiling tiling, int64_t cols) {
  return tiling == Fp8Tiling::kTensor ? cols : tiling == Fp8Tiling::kCol128x1 ? 1 : nm::kFp8TileEdge;
}

// Row r of the input as fp32: the fp32 row itself, or the bf16 row widened (exactly) into buf.
const float* input_row(const Fp8QuantizeArgs& a, int64_t r, float* buf) {
  if (a.x_f32 != nullptr) return a.x_f32 + r * a.cols;
  const uint16_t* src = a.x_bf16 + r * a.cols;
#pragma omp simd
  for (int64_t c = 0; c < a.cols; ++c) buf[c] = nm::bf16_to_f32(src[c]);
  return buf;
}

// Folds one row into its tile row's amaxes m (ordered |x| bits).
void fold_row_amax(const float* row, int64_t cols, Fp8Tiling tiling, uint32_t* m) {
  if (tiling == Fp8Tiling::kCol128x1) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) m[c] = nm::fp8_amax_bits_max(m[c], nm::fp8_abs_bits(row[c]));
    return;
  }
  const int64_t width = cols_per_segment(tiling, cols);
  for (int64_t t = 0, c0 = 0; c0 < cols; ++t, c0 += width) {
    const int64_t c1 = std::min(cols, c0 + width);
    uint32_t local = 0u;
#pragma omp simd reduction(max : local)
    for (int64_t c = c0; c < c1; ++c) local = nm::fp8_amax_bits_max(local, nm::fp8_abs_bits(row[c]));
    m[t] = nm::fp8_amax_bits_max(m[t], local);
  }
}

// codes[c] = fp8(row[c] * s) for a run of one scale, the format chosen outside the loop.
void cast_run(const float* row, uint8_t* codes, int64_t n, float s, Fp8Format format) {
  if (format == Fp8Format::kE4M3) {
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) codes[c] = nm::f32_to_e4m3(row[c] * s, nm::Overflow::kSaturate);
  } else {
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) codes[c] = nm::f32_to_e5m2(row[c] * s, nm::Overflow::kSaturate);
  }
}

// Every code's exact value (fp8_decode), so dequantizing is a table lookup and a product.
std::array<float, 256> decode_table(Fp8Format format) {
  std::array<float, 256> table{};
  for (int code = 0; code < 256; ++code) table[size_t(code)] = nm::fp8_decode(uint8_t(code), format);
  return table;
}

// out[r * cols + c] = widen(decode(code) * s_inv) for every element, out fp32 or bf16 bits.
template <class Out, class Widen>
void dequantize(const Fp8Operand& x, Out* out, Widen widen) {
  const std::array<float, 256> table = decode_table(x.format);
  const float* lut = table.data();
  const int64_t band = rows_per_band(x.tiling, x.rows), width = cols_per_segment(x.tiling, x.cols);
  const int64_t tile_cols = nm::fp8_tile_cols(x.tiling, x.cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    const uint8_t* codes = x.codes + r * x.cols;
    const float* scales = x.scale_inv + (r / band) * tile_cols;
    Out* dst = out + r * x.cols;
    if (x.tiling == Fp8Tiling::kCol128x1) {
#pragma omp simd
      for (int64_t c = 0; c < x.cols; ++c) dst[c] = widen(lut[codes[c]] * scales[c]);
      continue;
    }
    for (int64_t t = 0, c0 = 0; c0 < x.cols; ++t, c0 += width) {
      const int64_t c1 = std::min(x.cols, c0 + width);
      const float s_inv = scales[t];
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) dst[c] = widen(lut[codes[c]] * s_inv);
    }
  }
}

}  // namespace

void fp8_quantize_cpu(const Fp8QuantizeArgs& a) {
  // The backend (framework/backend/cpu_nn_ops.cpp) has checked the arguments.
  const int64_t tiles = nm::fp8_scale_count(a.tiling, a.rows, a.cols);
  const int64_t tile_cols = nm::fp8_tile_cols(a.tiling, a.cols);
  const int64_t band = rows_per_band(a.tiling, a.rows);
  const int64_t bands = (a.rows + band - 1) / band;

  // 1. Each tile's amax, as the max of ordered |x| bits: a max, so the same whatever the order.
  // Bands (tile rows) are disjoint and run in parallel; per tensor, threads take rows and their
  // partial maxes are reduced.
  std::vector<uint32_t> amax_bits(static_cast<size_t>(tiles), 0u);
  if (a.tiling == Fp8Tiling::kTensor) {
    uint32_t m = 0u;
#pragma omp parallel reduction(max : m)
    {
      std::vector<float> buf(size_t(a.x_f32 != nullptr ? 0 : a.cols));
      uint32_t local = 0u;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < a.rows; ++r) fold_row_amax(input_row(a, r, buf.data()), a.cols, a.tiling, &local);
      m = nm::fp8_amax_bits_max(m, local);
    }
    amax_bits[0] = m;
  } else {
#pragma omp parallel
    {
      std::vector<float> buf(size_t(a.x_f32 != nullptr ? 0 : a.cols));
#pragma omp for schedule(static)
      for (int64_t b = 0; b < bands; ++b) {
        uint32_t* m = amax_bits.data() + b * tile_cols;
        for (int64_t r = b * band; r < std::min(a.rows, (b + 1) * band); ++r) {
          fold_row_amax(input_row(a, r, buf.data()), a.cols, a.tiling, m);
        }
      }
    }
  }

  // 2. Each tile's scale; the matrix's amax for delayed scaling's history.
  std::vector<float> scale(static_cast<size_t>(tiles));
  uint32_t total = 0u;
  for (int64_t t = 0; t < tiles; ++t) {
    const float amax = nm::bits_to_f32(amax_bits[size_t(t)]);
    scale[size_t(t)] = a.given_scale != nullptr ? *a.given_scale
                                                : nm::fp8_scale_from_amax(amax, a.format, a.margin, a.power_of_two);
    a.scale_inv[t] = nm::fp8_scale_inv(scale[size_t(t)]);
    total = nm::fp8_amax_bits_max(total, amax_bits[size_t(t)]);
  }
  // Folded into the value there (an amax is never negative, so its bits order as |x| bits do).
  if (a.amax != nullptr) *a.amax = nm::bits_to_f32(nm::fp8_amax_bits_max(nm::f32_to_bits(*a.amax), total));

  // 3. The cast, a run of one scale at a time (per column under 128 x 1 tiles).
  const int64_t width = cols_per_segment(a.tiling, a.cols);
#pragma omp parallel
  {
    std::vector<float> buf(size_t(a.x_f32 != nullptr ? 0 : a.cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < a.rows; ++r) {
      const float* row = input_row(a, r, buf.data());
      const float* scales = scale.data() + (r / band) * tile_cols;
      uint8_t* codes = a.codes + r * a.cols;
      if (a.tiling == Fp8Tiling::kCol128x1) {
        if (a.format == Fp8Format::kE4M3) {
#pragma omp simd
          for (int64_t c = 0; c < a.cols; ++c) codes[c] = nm::f32_to_e4m3(row[c] * scales[c], nm::Overflow::kSaturate);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < a.cols; ++c) codes[c] = nm::f32_to_e5m2(row[c] * scales[c], nm::Overflow::kSaturate);
        }
        continue;
      }
      for (int64_t t = 0, c0 = 0; c0 < a.cols; ++t, c0 += width) {
        cast_run(row + c0, codes + c0, std::min(a.cols, c0 + width) - c0, scales[t], a.format);
      }
    }
  }
}

void fp8_dequantize_f32_cpu(const Fp8Operand& x, float* out) {
  dequantize(x, out, [](float v) { return v; });
}

void fp8_dequantize_bf16_cpu(const Fp8Operand& x, uint16_t* out) {
  dequantize(x, out, [](float v) { return nm::f32_to_bf16_rne(v); });
}

void fp8_matmul_cpu(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                    void* workspace) {
  // The backend has checked that the operands fit the shape.
  GemmShape dense = shape;
  dense.lda = a.cols;
  dense.ldb = b.cols;
  if (a.power_of_two && b.power_of_two) {  // exact in bf16
    auto* wa = static_cast<uint16_t*>(workspace);
    uint16_t* wb = wa + a.rows * a.cols;
    fp8_dequantize_bf16_cpu(a, wa);
    fp8_dequantize_bf16_cpu(b, wb);
    matmul_cpu(GemmDtype::kBF16, dense, wa, wb, c, accumulate);
  } else {
    auto* wa = static_cast<float*>(workspace);
    float* wb = wa + a.rows * a.cols;
    fp8_dequantize_f32_cpu(a, wa);
    fp8_dequantize_f32_cpu(b, wb);
    matmul_cpu(GemmDtype::kF32, dense, wa, wb, c, accumulate);
  }
}

}  // namespace farthing::kernels

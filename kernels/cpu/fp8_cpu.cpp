// fp8_cpu.cpp — see fp8_cpu.h.
#include "kernels/cpu/fp8_cpu.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/bf16.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

// Element (r, c) of the input, widened to fp32 (exact from bf16).
struct Input {
  const float* f32;
  const uint16_t* bf16;
  int64_t cols;
  float at(int64_t r, int64_t c) const {
    const int64_t i = r * cols + c;
    return f32 != nullptr ? f32[i] : nm::bf16_to_f32(bf16[i]);
  }
};

// Rows [row_begin, row_end) that share tiles: one row for 1 x 128 tiles, 128 for the others.
int64_t rows_per_band(Fp8Tiling tiling, int64_t rows) {
  return tiling == Fp8Tiling::kTensor ? rows : tiling == Fp8Tiling::kRow1x128 ? 1 : nm::kFp8TileEdge;
}

}  // namespace

void fp8_quantize_cpu(const Fp8QuantizeArgs& a) {
  // The backend (framework/backend/cpu_nn_ops.cpp) has checked the arguments.
  const Input x{a.x_f32, a.x_bf16, a.cols};
  const int64_t tiles = nm::fp8_scale_count(a.tiling, a.rows, a.cols);
  const int64_t band = rows_per_band(a.tiling, a.rows);
  const int64_t bands = (a.rows + band - 1) / band;

  // 1. Each tile's amax, as the max of ordered |x| bits. A band's tiles are disjoint from every
  // other band's, except under per-tensor tiling, where each band is a thread's partial max.
  std::vector<uint32_t> amax_bits(static_cast<size_t>(tiles), 0u);
  if (a.tiling == Fp8Tiling::kTensor) {
    uint32_t m = 0u;
#pragma omp parallel for reduction(max : m) schedule(static)
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t c = 0; c < a.cols; ++c) m = nm::fp8_amax_bits_max(m, nm::fp8_abs_bits(x.at(r, c)));
    }
    amax_bits[0] = m;
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t r_end = std::min(a.rows, (b + 1) * band);
      for (int64_t r = b * band; r < r_end; ++r) {
        for (int64_t c = 0; c < a.cols; ++c) {
          uint32_t& m = amax_bits[size_t(nm::fp8_scale_index(a.tiling, r, c, a.cols))];
          m = nm::fp8_amax_bits_max(m, nm::fp8_abs_bits(x.at(r, c)));
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
  if (a.amax != nullptr) *a.amax = nm::bits_to_f32(total);

  // 3. The cast.
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) {
      const float s = scale[size_t(nm::fp8_scale_index(a.tiling, r, c, a.cols))];
      a.codes[r * a.cols + c] = nm::fp8_quantize(x.at(r, c), s, a.format);
    }
  }
}

void fp8_dequantize_f32_cpu(const Fp8Operand& x, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t c = 0; c < x.cols; ++c) {
      const float s_inv = x.scale_inv[nm::fp8_scale_index(x.tiling, r, c, x.cols)];
      out[r * x.cols + c] = nm::fp8_dequantize(x.codes[r * x.cols + c], s_inv, x.format);
    }
  }
}

void fp8_dequantize_bf16_cpu(const Fp8Operand& x, uint16_t* out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t c = 0; c < x.cols; ++c) {
      const float s_inv = x.scale_inv[nm::fp8_scale_index(x.tiling, r, c, x.cols)];
      out[r * x.cols + c] = nm::f32_to_bf16_rne(nm::fp8_dequantize(x.codes[r * x.cols + c], s_inv, x.format));
    }
  }
}

int64_t fp8_matmul_workspace_bytes_cpu(int64_t a_elems, int64_t b_elems, bool power_of_two) {
  return (a_elems + b_elems) * (power_of_two ? 2 : 4);
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

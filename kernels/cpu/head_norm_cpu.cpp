// head_norm_cpu.cpp — see head_norm_cpu.h.
#include "kernels/cpu/head_norm_cpu.h"

#include <cstring>

#include "kernels/cpu/act_storage.h"
#include "kernels/numerics/norm_steps.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

using cpu_act::store;
using cpu_act::widened;

template <class T>
void forward_rows(const HeadNormShape& s, T* out, float* rstd, const T* x, const float* wq, const float* wk,
                  float eps) {
  const int64_t D = s.head_dim, heads = s.normed_heads();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* xr = x + r * s.stride;
    T* o = out + r * s.stride;
    for (int64_t h = 0; h < heads; ++h) {
      const float* w = h < s.q_heads ? wq : wk;
      const T* xh = xr + h * D;
      float sum = 0.0f;
      for (int64_t i = 0; i < D; ++i) sum += widened(xh[i]) * widened(xh[i]);
      const float sr = nm::norm_rstd_f32(sum, float(D), eps);
      rstd[r * heads + h] = sr;
      for (int64_t i = 0; i < D; ++i) store(o + h * D + i, nm::rmsnorm_out_f32(widened(xh[i]), sr, w[i]));
    }
    // v heads pass through unchanged (same storage, so the bits are copied).
    std::memcpy(o + heads * D, xr + heads * D, size_t(s.stride - heads * D) * sizeof(T));
  }
}

template <class T>
void backward_rows(const HeadNormShape& s, T* d, float* dwq, float* dwk, const T* x, const float* wq,
                   const float* wk, const float* rstd) {
  const int64_t D = s.head_dim, heads = s.normed_heads();
  // Weight gradients first, while d still holds the gradient of the normalised heads: per channel
  // (threads split the channels), rows in order, heads in order within a row.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < 2 * D; ++i) {
    const bool q = i < D;
    const int64_t c = q ? i : i - D;
    const int64_t h0 = q ? 0 : s.q_heads, h1 = q ? s.q_heads : heads;
    float acc = 0.0f;
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t h = h0; h < h1; ++h) {
        const int64_t at = r * s.stride + h * D + c;
        acc += nm::rmsnorm_dw_term_f32(widened(d[at]), widened(x[at]), rstd[r * heads + h]);
      }
    }
    (q ? dwq : dwk)[c] += acc;
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* w = h < s.q_heads ? wq : wk;
      T* dh = d + r * s.stride + h * D;
      const T* xh = x + r * s.stride + h * D;
      const float sr = rstd[r * heads + h];
      float dot = 0.0f;  // sum_i w_i dy_i x_i
      for (int64_t i = 0; i < D; ++i) dot += w[i] * widened(dh[i]) * widened(xh[i]);
      const float k = nm::rmsnorm_dx_coeff_f32(dot, sr, float(D));
      for (int64_t i = 0; i < D; ++i) store(dh + i, nm::rmsnorm_dx_f32(w[i], widened(dh[i]), widened(xh[i]), sr, k));
    }
  }
}

}  // namespace

void head_rmsnorm_forward_cpu(const HeadNormShape& s, float* out, float* rstd, const float* x, const float* wq,
                              const float* wk, float eps) {
  forward_rows(s, out, rstd, x, wq, wk, eps);
}
void head_rmsnorm_forward_cpu(const HeadNormShape& s, uint16_t* out, float* rstd, const uint16_t* x,
                              const float* wq, const float* wk, float eps) {
  forward_rows(s, out, rstd, x, wq, wk, eps);
}
void head_rmsnorm_backward_cpu(const HeadNormShape& s, float* d, float* dwq, float* dwk, const float* x,
                               const float* wq, const float* wk, const float* rstd) {
  backward_rows(s, d, dwq, dwk, x, wq, wk, rstd);
}
void head_rmsnorm_backward_cpu(const HeadNormShape& s, uint16_t* d, float* dwq, float* dwk, const uint16_t* x,
                               const float* wq, const float* wk, const float* rstd) {
  backward_rows(s, d, dwq, dwk, x, wq, wk, rstd);
}

}  // namespace farthing::kernels

// nn_cpu.cpp — see nn_cpu.h.
#include "kernels/cpu/nn_cpu.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/act_storage.h"
#include "kernels/numerics/activations.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/exp_f32.h"
#include "kernels/numerics/minifloat.h"
#include "kernels/numerics/norm_steps.h"
#include "kernels/numerics/rope_rotate.h"
#include "kernels/numerics/scale_add.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

// Calls fn(begin, end) for this thread's share of c channels (multiples of 16), inside an
// OpenMP parallel region, so column sums are per-thread and in row order.
template <class Fn>
void for_channel_ranges(int64_t c, Fn fn) {
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t chunk = ((c + nt - 1) / nt + 15) / 16 * 16;
    const int64_t begin = std::min(c, t * chunk), end = std::min(c, begin + chunk);
    if (begin < end) fn(begin, end);
  }
}

inline float sum_squares(const float* x, int64_t c) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < c; ++i) acc += x[i] * x[i];
  return acc;
}

using cpu_act::store;
using cpu_act::widened;

// x: fp32, or bf16 (the residual stream under bf16 activations), each row summed as fp32 values.
template <class Out, class In>
void rmsnorm_forward_rows(Out* out, float* rstd, const In* x, const float* w, int64_t n, int64_t c, float eps) {
#pragma omp parallel
  {
    cpu_act::RowsF32<In> rows(1, c);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* xr = rows.row(x + r * c, 0);
      Out* o = out + r * c;
      // NOTE: as Hugging Face: rsqrt(mean(x^2) + eps) in fp32, then (x * r) * w.
      const float s = nm::norm_rstd_f32(sum_squares(xr, c), float(c), eps);
      rstd[r] = s;
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) store(o + i, nm::rmsnorm_out_f32(xr[i], s, w[i]));
    }
  }
}

template <class Out, class In>
void layernorm_forward_rows(Out* out, float* mean, float* rstd, const In* x, const float* w, const float* b,
                            int64_t n, int64_t c, float eps) {
#pragma omp parallel
  {
    cpu_act::RowsF32<In> rows(1, c);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* xr = rows.row(x + r * c, 0);
      Out* o = out + r * c;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < c; ++i) sum += xr[i];
      const float m = sum / float(c);
      float var = 0.0f;
#pragma omp simd reduction(+ : var)
      for (int64_t i = 0; i < c; ++i) var += nm::layernorm_dev2_f32(xr[i], m);
      const float s = nm::norm_rstd_f32(var, float(c), eps);
      mean[r] = m;
      rstd[r] = s;
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) store(o + i, nm::layernorm_out_f32(xr[i], m, s, w[i], b[i]));
    }
  }
}

// The gated MLP activations, act = f(gate) * up: Gate supplies the scalar forward (SwiGLU's or
// GeGLU's, numerics/activations.h) and its gradient.
struct SwigluGate {
  static float forward(float g, float u) { return nm::swiglu_f32(g, u); }
  static void grad(float da, float g, float u, float& dg, float& du) { nm::swiglu_grad_f32(da, g, u, dg, du); }
};
struct GegluGate {
  static float forward(float g, float u) { return nm::geglu_f32(g, u); }
  static void grad(float da, float g, float u, float& dg, float& du) { nm::geglu_grad_f32(da, g, u, dg, du); }
};

template <class Gate, class Out, class In>
void gated_forward_rows(Out* act, const In* gu, int64_t n, int64_t h) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const In* g = gu + r * 2 * h;
    const In* u = g + h;
    Out* a = act + r * h;
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) store(a + i, Gate::forward(widened(g[i]), widened(u[i])));
  }
}

// T: every array's storage (fp32, or bf16 throughout under bf16 activations).
template <class Gate, class T>
void gated_backward_rows(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* g = gu + r * 2 * h;
    const T* u = g + h;
    const T* da = dact + r * h;
    T* dg = dgu + r * 2 * h;
    T* du = dg + h;
#pragma omp simd
    for (int64_t i = 0; i < h; ++i) {
      float dgi, dui;
      Gate::grad(widened(da[i]), widened(g[i]), widened(u[i]), dgi, dui);
      store(dg + i, dgi);
      store(du + i, dui);
    }
  }
}

template <class Out, class In>
void swiglu_forward_rows(Out* act, const In* gu, int64_t n, int64_t h) {
  gated_forward_rows<SwigluGate>(act, gu, n, h);
}
template <class T>
void swiglu_backward_rows(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h) {
  gated_backward_rows<SwigluGate>(dgu, dact, gu, n, h);
}

// a: null (no add: -0 is the additive identity that keeps x * s's bits, a -0 product included).
template <class T>
void scale_add_elements(T* out, const T* x, float s, const T* a, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    store(out + i, nm::scale_add_f32(widened(x[i]), s, a != nullptr ? widened(a[i]) : -0.0f));
  }
}

// The scalar maths (tanh form as v * sigmoid(2u), and its derivative) is numerics/activations.h.
template <class Out, class In>
void gelu_forward_elements(Out* out, const In* x, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) store(out + i, nm::gelu_tanh_f32(widened(x[i])));
}

template <class T>
void gelu_backward_elements(T* dx, const T* dout, const T* x, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) store(dx + i, widened(dout[i]) * nm::gelu_tanh_grad_f32(widened(x[i])));
}

}  // namespace

void rmsnorm_forward_cpu(float* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c, float eps) {
  rmsnorm_forward_rows(out, rstd, x, w, n, c, eps);
}
void rmsnorm_forward_cpu(uint16_t* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c,
                         float eps) {
  rmsnorm_forward_rows(out, rstd, x, w, n, c, eps);
}
void rmsnorm_forward_cpu(uint16_t* out, float* rstd, const uint16_t* x, const float* w, int64_t n, int64_t c,
                         float eps) {
  rmsnorm_forward_rows(out, rstd, x, w, n, c, eps);
}

namespace {

// dx += ..., dw += ... with dx and dout stored as T: each row's dout is summed as fp32 values
// (RowsF32), and each dx value widened, added to and rounded once.
template <class T>
void rmsnorm_backward_rows(T* dx, float* dw, const T* dout, const T* x, const float* w, const float* rstd, int64_t n,
                           int64_t c) {
#pragma omp parallel
  {
    cpu_act::RowsF32<T> rows(2, c);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* xr = rows.row(x + r * c, 0);
      const float* g = rows.row(dout + r * c, 1);
      T* d = dx + r * c;
      const float s = rstd[r];
      float dot = 0.0f;  // sum_i w_i dy_i x_i
#pragma omp simd reduction(+ : dot)
      for (int64_t i = 0; i < c; ++i) dot += w[i] * g[i] * xr[i];
      const float k = nm::rmsnorm_dx_coeff_f32(dot, s, float(c));
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) store(d + i, widened(d[i]) + nm::rmsnorm_dx_f32(w[i], g[i], xr[i], s, k));
    }
  }
  for_channel_ranges(c, [&](int64_t b, int64_t e) {
    for (int64_t r = 0; r < n; ++r) {
      const T* xr = x + r * c;
      const T* g = dout + r * c;
      const float s = rstd[r];
#pragma omp simd
      for (int64_t i = b; i < e; ++i) dw[i] += nm::rmsnorm_dw_term_f32(widened(g[i]), widened(xr[i]), s);
    }
  });
}

template <class T>
void layernorm_backward_rows(T* dx, float* dw, float* db, const T* dout, const T* x, const float* w,
                             const float* mean, const float* rstd, int64_t n, int64_t c) {
#pragma omp parallel
  {
    cpu_act::RowsF32<T> rows(2, c);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < n; ++r) {
      const float* xr = rows.row(x + r * c, 0);
      const float* g = rows.row(dout + r * c, 1);
      T* d = dx + r * c;
      const float m = mean[r], s = rstd[r];
      float dn_mean = 0.0f, dn_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dn_mean, dn_norm_mean)
      for (int64_t i = 0; i < c; ++i) {
        const float dn = w[i] * g[i];
        dn_mean += dn;
        dn_norm_mean += dn * nm::layernorm_norm_f32(xr[i], m, s);
      }
      dn_mean /= float(c);
      dn_norm_mean /= float(c);
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) {
        const float norm = nm::layernorm_norm_f32(xr[i], m, s);
        store(d + i, widened(d[i]) + nm::layernorm_dx_f32(w[i], g[i], norm, dn_mean, dn_norm_mean, s));
      }
    }
  }
  for_channel_ranges(c, [&](int64_t b, int64_t e) {
    for (int64_t r = 0; r < n; ++r) {
      const T* xr = x + r * c;
      const T* g = dout + r * c;
      const float m = mean[r], s = rstd[r];
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        const float gi = widened(g[i]);
        dw[i] += gi * nm::layernorm_norm_f32(widened(xr[i]), m, s);
        db[i] += gi;
      }
    }
  });
}

template <class T>
void embedding_backward_rows(float* dwte, float* dwpe, const T* dout, const int32_t* tokens, int64_t n, RowPositions pos,
                             int64_t c) {
  for_channel_ranges(c, [&](int64_t b, int64_t e) {
    for (int64_t r = 0; r < n; ++r) {
      const T* g = dout + r * c;
      float* dt = dwte + int64_t(tokens[r]) * c;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) dt[i] += widened(g[i]);
      if (dwpe) {
        float* dp = dwpe + pos.of(r) * c;
#pragma omp simd
        for (int64_t i = b; i < e; ++i) dp[i] += widened(g[i]);
      }
    }
  });
}

}  // namespace

void rmsnorm_backward_cpu(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd,
                          int64_t n, int64_t c) {
  rmsnorm_backward_rows(dx, dw, dout, x, w, rstd, n, c);
}
void rmsnorm_backward_cpu(uint16_t* dx, float* dw, const uint16_t* dout, const uint16_t* x, const float* w,
                          const float* rstd, int64_t n, int64_t c) {
  rmsnorm_backward_rows(dx, dw, dout, x, w, rstd, n, c);
}

void layernorm_forward_cpu(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                           int64_t n, int64_t c, float eps) {
  layernorm_forward_rows(out, mean, rstd, x, w, b, n, c, eps);
}
void layernorm_forward_cpu(uint16_t* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                           int64_t n, int64_t c, float eps) {
  layernorm_forward_rows(out, mean, rstd, x, w, b, n, c, eps);
}
void layernorm_forward_cpu(uint16_t* out, float* mean, float* rstd, const uint16_t* x, const float* w,
                           const float* b, int64_t n, int64_t c, float eps) {
  layernorm_forward_rows(out, mean, rstd, x, w, b, n, c, eps);
}

void layernorm_backward_cpu(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                            const float* mean, const float* rstd, int64_t n, int64_t c) {
  layernorm_backward_rows(dx, dw, db, dout, x, w, mean, rstd, n, c);
}
void layernorm_backward_cpu(uint16_t* dx, float* dw, float* db, const uint16_t* dout, const uint16_t* x,
                            const float* w, const float* mean, const float* rstd, int64_t n, int64_t c) {
  layernorm_backward_rows(dx, dw, db, dout, x, w, mean, rstd, n, c);
}

namespace {

// x: fp32, or bf16 (each pair widened exactly, rotated in fp32, rounded to nearest even once).
template <class T>
void rope_rows(T* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
               const float* sin, bool inverse) {
  const int64_t half = head_dim / 2;
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* cr = cos + pos.of(r) * half;
    const float* sr = sin + pos.of(r) * half;
    for (int64_t h = 0; h < heads; ++h) {
      T* v = x + r * stride + h * head_dim;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        float a, b;
        nm::rope_rotate_f32(widened(v[i]), widened(v[i + half]), cr[i], sign * sr[i], a, b);
        store(v + i, a);
        store(v + i + half, b);
      }
    }
  }
}

}  // namespace

void rope_apply_cpu(float* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim,
                    int64_t stride, const float* cos, const float* sin, bool inverse) {
  rope_rows(x, rows, pos, heads, head_dim, stride, cos, sin, inverse);
}
void rope_apply_cpu(uint16_t* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim,
                    int64_t stride, const float* cos, const float* sin, bool inverse) {
  rope_rows(x, rows, pos, heads, head_dim, stride, cos, sin, inverse);
}

void swiglu_forward_cpu(float* act, const float* gu, int64_t n, int64_t h) { swiglu_forward_rows(act, gu, n, h); }
void swiglu_forward_cpu(uint16_t* act, const float* gu, int64_t n, int64_t h) { swiglu_forward_rows(act, gu, n, h); }
void swiglu_forward_cpu(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h) { swiglu_forward_rows(act, gu, n, h); }

void swiglu_backward_cpu(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h) {
  swiglu_backward_rows(dgu, dact, gu, n, h);
}
void swiglu_backward_cpu(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h) {
  swiglu_backward_rows(dgu, dact, gu, n, h);
}

void geglu_forward_cpu(float* act, const float* gu, int64_t n, int64_t h) {
  gated_forward_rows<GegluGate>(act, gu, n, h);
}
void geglu_forward_cpu(uint16_t* act, const float* gu, int64_t n, int64_t h) {
  gated_forward_rows<GegluGate>(act, gu, n, h);
}
void geglu_forward_cpu(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h) {
  gated_forward_rows<GegluGate>(act, gu, n, h);
}
void geglu_backward_cpu(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h) {
  gated_backward_rows<GegluGate>(dgu, dact, gu, n, h);
}
void geglu_backward_cpu(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h) {
  gated_backward_rows<GegluGate>(dgu, dact, gu, n, h);
}

void scale_add_cpu(float* out, const float* x, float s, const float* a, int64_t count) {
  scale_add_elements(out, x, s, a, count);
}
void scale_add_cpu(uint16_t* out, const uint16_t* x, float s, const uint16_t* a, int64_t count) {
  scale_add_elements(out, x, s, a, count);
}

void gelu_forward_cpu(float* out, const float* x, int64_t count) { gelu_forward_elements(out, x, count); }
void gelu_forward_cpu(uint16_t* out, const float* x, int64_t count) { gelu_forward_elements(out, x, count); }
void gelu_forward_cpu(uint16_t* out, const uint16_t* x, int64_t count) { gelu_forward_elements(out, x, count); }

void gelu_backward_cpu(float* dx, const float* dout, const float* x, int64_t count) {
  gelu_backward_elements(dx, dout, x, count);
}
void gelu_backward_cpu(uint16_t* dx, const uint16_t* dout, const uint16_t* x, int64_t count) {
  gelu_backward_elements(dx, dout, x, count);
}

namespace {

// out[r] = wte[tok[r]] (+ wpe[pos.of(r)]), each table element widened exactly to fp32 first.
// out: fp32, or bf16 (the residual stream under bf16 activations: the fp32 sum rounded once).
template <class Out, class T>
void embedding_forward_rows(Out* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t n, RowPositions pos,
                            int64_t c) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* e = wte + int64_t(tokens[r]) * c;
    Out* o = out + r * c;
    if (wpe) {
      const T* p = wpe + pos.of(r) * c;
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) store(o + i, widened(e[i]) + widened(p[i]));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) store(o + i, widened(e[i]));
    }
  }
}

}  // namespace

void embedding_forward_cpu(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                           int64_t n, RowPositions pos, int64_t c) {
  embedding_forward_rows(out, tokens, wte, wpe, n, pos, c);
}

void embedding_forward_cpu(uint16_t* out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                           RowPositions pos, int64_t c) {
  embedding_forward_rows(out, tokens, wte, wpe, n, pos, c);
}
void embedding_forward_bf16_cpu(float* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                int64_t n, RowPositions pos, int64_t c) {
  embedding_forward_rows(out, tokens, wte, wpe, n, pos, c);
}
void embedding_forward_bf16_cpu(uint16_t* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                int64_t n, RowPositions pos, int64_t c) {
  embedding_forward_rows(out, tokens, wte, wpe, n, pos, c);
}

void embedding_backward_cpu(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int64_t n,
                            RowPositions pos, int64_t c) {
  embedding_backward_rows(dwte, dwpe, dout, tokens, n, pos, c);
}
void embedding_backward_cpu(float* dwte, float* dwpe, const uint16_t* dout, const int32_t* tokens, int64_t n,
                            RowPositions pos, int64_t c) {
  embedding_backward_rows(dwte, dwpe, dout, tokens, n, pos, c);
}

void bias_add_cpu(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    float* o = out + r * stride;
#pragma omp simd
    for (int64_t i = 0; i < c; ++i) o[i] += bias[i];
  }
}

namespace {

template <class T>
void bias_backward_columns(float* dbias, const T* dout, int64_t n, int64_t c, int64_t stride) {
  for_channel_ranges(c, [&](int64_t b, int64_t e) {
    for (int64_t r = 0; r < n; ++r) {
      const T* g = dout + r * stride;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) dbias[i] += widened(g[i]);
    }
  });
}

}  // namespace

void bias_backward_cpu(float* dbias, const float* dout, int64_t n, int64_t c, int64_t stride) {
  bias_backward_columns(dbias, dout, n, c, stride);
}
void bias_backward_cpu(float* dbias, const uint16_t* dout, int64_t n, int64_t c, int64_t stride) {
  bias_backward_columns(dbias, dout, n, c, stride);
}

void add_cpu(float* dst, const float* a, const float* b, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = a[i] + b[i];
}

void accumulate_cpu(float* dst, const float* a, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] += a[i];
}

namespace {

// One row of fp32 logits, in place: becomes its gradient (want_grad); returns its loss.
double cross_entropy_row(float* l, int32_t target, int64_t vocab, float grad_scale, bool want_grad) {
  float m = l[0];
  for (int64_t i = 1; i < vocab; ++i) m = std::max(m, l[i]);
  const float target_logit = l[target];
  // e^(l - m) a chunk at a time (vectorized), summed in index order in double.
  double sum = 0.0;
  constexpr int64_t kChunk = 256;
  alignas(64) float e[kChunk];
  for (int64_t i0 = 0; i0 < vocab; i0 += kChunk) {
    const int64_t n = std::min(kChunk, vocab - i0);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) e[i] = nm::exp_f32(l[i0 + i] - m);
    for (int64_t i = 0; i < n; ++i) sum += double(e[i]);
    if (want_grad) std::memcpy(l + i0, e, size_t(n) * 4);
  }
  if (want_grad) {
    const float k = float(double(grad_scale) / sum);
#pragma omp simd
    for (int64_t i = 0; i < vocab; ++i) l[i] *= k;
    l[target] -= grad_scale;
  }
  return (double(m) + std::log(sum)) - double(target_logit);
}

// T: fp32 logits (in place), or bf16 ones (each row widened into a per-thread fp32 copy, run as
// the fp32 row, and each gradient value rounded once on the way back).
template <class T>
double cross_entropy_rows_any(T* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                              float grad_scale, bool want_grad) {
  // NOTE: each row's loss is kept and the losses are summed in row order afterwards, so the
  // total does not depend on the thread count (an OpenMP reduction combines per-thread partial
  // sums, whose split depends on it: the parity harness caught a last-bit difference).
  std::vector<double> row_loss(size_t(std::max<int64_t>(rows, 0)), 0.0);
#pragma omp parallel
  {
    std::vector<float> widened_row(std::is_same_v<T, float> ? 0 : size_t(vocab));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      T* l = logits + r * stride;  // the row's vocab values; the pad columns up to stride are never touched
      const int32_t target = targets[r];
      if (target < 0) {
        if (want_grad) std::memset(l, 0, size_t(vocab) * sizeof(T));
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {
        row_loss[size_t(r)] = cross_entropy_row(l, target, vocab, grad_scale, want_grad);
      } else {
        float* f = widened_row.data();
        for (int64_t i = 0; i < vocab; ++i) f[i] = widened(l[i]);
        row_loss[size_t(r)] = cross_entropy_row(f, target, vocab, grad_scale, want_grad);
        if (want_grad) {
          for (int64_t i = 0; i < vocab; ++i) store(l + i, f[i]);
        }
      }
    }
  }
  double total = 0.0;
  for (const double loss : row_loss) total += loss;
  return total;
}

}  // namespace

double cross_entropy_rows_cpu(float* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                              float grad_scale, bool want_grad) {
  return cross_entropy_rows_any(logits, targets, rows, vocab, stride, grad_scale, want_grad);
}
double cross_entropy_rows_cpu(uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                              float grad_scale, bool want_grad) {
  return cross_entropy_rows_any(logits, targets, rows, vocab, stride, grad_scale, want_grad);
}

void f32_to_bf16_cpu(uint16_t* dst, const float* src, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = numerics::f32_to_bf16_rne(src[i]);
}

void f32_to_f16_cpu(uint16_t* dst, const float* src, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] = numerics::f32_to_fp16_rne(src[i]);
}

}  // namespace farthing::kernels

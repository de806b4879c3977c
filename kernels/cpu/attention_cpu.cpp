// attention_cpu.cpp — see attention_cpu.h.
#include "kernels/cpu/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace farthing::kernels {

namespace {

inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace

void attention_forward_cpu(const AttentionShape& s, float* out, float* lse, const float* qkv) {
  const int64_t T = s.seq, D = s.head_dim, Hq = s.q_heads, S = s.qkv_stride();
  const int64_t group = Hq / s.kv_heads;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(T));
#pragma omp for collapse(3) schedule(dynamic, 8)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < Hq; ++h) {
        for (int64_t t = 0; t < T; ++t) {
          const float* base = qkv + b * T * S;
          const float* q = base + t * S + h * D;
          const float* k0 = base + Hq * D + (h / group) * D;
          const float* v0 = k0 + s.kv_heads * D;
          float m = -INFINITY;
          for (int64_t j = 0; j <= t; ++j) {
            p[size_t(j)] = dot(q, k0 + j * S, D) * scale;
            m = std::max(m, p[size_t(j)]);
          }
          float sum = 0.0f;
          for (int64_t j = 0; j <= t; ++j) {
            p[size_t(j)] = std::exp(p[size_t(j)] - m);
            sum += p[size_t(j)];
          }
          float* o = out + (b * T + t) * Hq * D + h * D;
          std::memset(o, 0, size_t(D) * 4);
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j <= t; ++j) {
            const float w = p[size_t(j)] * inv;
            const float* v = v0 + j * S;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) o[d] += w * v[d];
          }
          lse[(b * Hq + h) * T + t] = m + std::log(sum);
        }
      }
    }
  }
}

void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const float* out, const float* lse, const float* qkv) {
  const int64_t T = s.seq, D = s.head_dim, Hq = s.q_heads, Hkv = s.kv_heads, S = s.qkv_stride();
  const int64_t group = Hq / Hkv;
  const float scale = 1.0f / std::sqrt(float(D));
  float* dk_all = scratch;                       // (B, Hq, T, D)
  float* dv_all = scratch + s.batch * Hq * T * D;  // (B, Hq, T, D)
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(T));
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < Hq; ++h) {
        const float* base = qkv + b * T * S;
        const float* k0 = base + Hq * D + (h / group) * D;
        const float* v0 = k0 + Hkv * D;
        float* dk = dk_all + (b * Hq + h) * T * D;
        float* dv = dv_all + (b * Hq + h) * T * D;
        std::memset(dk, 0, size_t(T * D) * 4);
        std::memset(dv, 0, size_t(T * D) * 4);
        for (int64_t i = 0; i < T; ++i) {
          const float* q = base + i * S + h * D;
          const float* go = dout + (b * T + i) * Hq * D + h * D;
          const float* o = out + (b * T + i) * Hq * D + h * D;
          float* dq = dqkv + (b * T + i) * S + h * D;
          const float l = lse[(b * Hq + h) * T + i];
          const float di = dot(go, o, D);
          std::memset(dq, 0, size_t(D) * 4);
          for (int64_t j = 0; j <= i; ++j) {
            const float pj = std::exp(dot(q, k0 + j * S, D) * scale - l);
            const float dp = dot(go, v0 + j * S, D);
            const float ds = pj * (dp - di) * scale;
            const float* k = k0 + j * S;
            float* dkj = dk + j * D;
            float* dvj = dv + j * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) {
              dq[d] += ds * k[d];
              dkj[d] += ds * q[d];
              dvj[d] += pj * go[d];
            }
          }
        }
      }
    }
    // Sum each group's per-query-head dk/dv into the kv head, in head order.
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t t = 0; t < T; ++t) {
        float* row = dqkv + (b * T + t) * S;
        for (int64_t kh = 0; kh < Hkv; ++kh) {
          float* dk = row + Hq * D + kh * D;
          float* dv = row + (Hq + Hkv) * D + kh * D;
          for (int64_t g = 0; g < group; ++g) {
            const int64_t h = kh * group + g;
            const float* sk = dk_all + ((b * Hq + h) * T + t) * D;
            const float* sv = dv_all + ((b * Hq + h) * T + t) * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) {
              dk[d] = g == 0 ? sk[d] : dk[d] + sk[d];
              dv[d] = g == 0 ? sv[d] : dv[d] + sv[d];
            }
          }
        }
      }
    }
  }
}

}  // namespace farthing::kernels

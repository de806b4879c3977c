// attention_cpu.cpp — see attention_cpu.h. Blocked by kQueryBlock query rows: the scores
// of a block against its causal prefix of keys are one small fp32 GEMM (oneDNN, run
// single-threaded inside the OpenMP task), softmax is exact per row (its sum in key order, as
// decoding), and the products with V (and, in backward, dQ, dK, dV) are GEMMs again.
#include "kernels/cpu/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/act_storage.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/numerics/attention_steps.h"
#include "kernels/numerics/exp_f32.h"

namespace farthing::kernels {

namespace {

constexpr int64_t kQueryBlock = 64;

inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// max(x[0..n)): exact in any order, so eight running maxima (which vectorize) give the bits of
// a left-to-right scan. NaN elements are skipped, as std::max skips them.
float max_of(const float* x, int64_t n) {
  float lane[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) lane[l] = std::max(lane[l], x[j + l]);
  }
  for (int l = 0; j + l < n; ++l) lane[l] = std::max(lane[l], x[j + l]);
  float m = lane[0];
  for (int l = 1; l < 8; ++l) m = std::max(m, lane[l]);
  return m;
}

// sum[r] = p[r][lo[r]] + p[r][lo[r] + 1] + ... + p[r][hi[r] - 1] (rows ld apart), each added in
// key order. NOTE: key order is the softmax denominator's definition (decoding sums the same way);
// eight rows go at once so that their additions overlap instead of each waiting ~3 cycles on the
// one before, which a single row's sum cannot avoid. Each of the eight sums its own entries
// before the span all eight share, then that span, then its own again: still left to right.
void row_sums_in_key_order(const float* p, int64_t ld, int64_t rows, const int64_t* lo, const int64_t* hi,
                           float* sum) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const int64_t common_lo = *std::max_element(lo + r, lo + r + 8);
    const int64_t common_hi = std::max(common_lo, *std::min_element(hi + r, hi + r + 8));
    for (int l = 0; l < 8; ++l) {
      for (int64_t j = lo[r + l]; j < std::min(common_lo, hi[r + l]); ++j) acc[l] += p[(r + l) * ld + j];
    }
    for (int64_t j = common_lo; j < common_hi; ++j) {
      for (int l = 0; l < 8; ++l) acc[l] += p[(r + l) * ld + j];
    }
    for (int l = 0; l < 8; ++l) {
      for (int64_t j = std::max(common_hi, lo[r + l]); j < hi[r + l]; ++j) acc[l] += p[(r + l) * ld + j];
      sum[r + l] = acc[l];
    }
  }
  for (; r < rows; ++r) {
    float acc = 0.0f;
    for (int64_t j = lo[r]; j < hi[r]; ++j) acc += p[r * ld + j];
    sum[r] = acc;
  }
}

// The keys a block of query rows q0 .. q0 + rows - 1 of sequence b sees: row r's are
// [kbeg + lo[r], kbeg + hi[r]) of the sequence. Causal (hi = q0 + r + 1), from the row's first
// visible key (AttentionShape::first_key: its document's start, or the sliding window's edge). The block's GEMMs start at kbeg: the first key any row of the block sees, rounded down
// to a multiple of kQueryBlock. NOTE: so the GEMMs keep the shapes (rows, q0 + rows - kbeg) that
// causal blocks without documents have, whose oneDNN primitives are made once and reused; keys
// of every length would make a new primitive for most blocks of most batches.
int64_t visible_keys(const AttentionShape& s, int64_t b, int64_t q0, int64_t rows, int64_t* lo, int64_t* hi) {
  int64_t kbeg = q0;
  for (int64_t r = 0; r < rows; ++r) kbeg = std::min(kbeg, s.first_key(b * s.seq + q0 + r));
  kbeg = kbeg / kQueryBlock * kQueryBlock;
  for (int64_t r = 0; r < rows; ++r) {
    lo[r] = s.first_key(b * s.seq + q0 + r) - kbeg;
    hi[r] = q0 + r + 1 - kbeg;
  }
  return kbeg;
}

// C (m, n; ldc) (+)= op(A) op(B), fp32.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, Trans ta, const float* b,
          int64_t ldb, Trans tb, float* c, int64_t ldc, bool accumulate) {
  matmul_cpu(GemmDtype::kF32, GemmShape{m, n, k, lda, ldb, ldc, ta, tb}, a, b, c, accumulate);
}

// Copies `rows` rows of one head (D values, rows `stride` apart in qkv) into a dense fp32 block
// (row stride D), widening bf16 exactly. NOTE: every GEMM below reads such dense blocks, whatever
// qkv's type: oneDNN's kernel (and so the bits) can depend on the operands' strides, so an fp32
// qkv and a bf16 one holding the same values must reach the GEMMs the same way.
template <class In>
void head_rows(const In* src, int64_t stride, int64_t rows, int64_t D, std::vector<float>& dst) {
  dst.resize(size_t(rows * D));
  for (int64_t r = 0; r < rows; ++r) {
    const In* x = src + r * stride;
    float* y = dst.data() + r * D;
    if constexpr (std::is_same_v<In, float>) {
      std::memcpy(y, x, size_t(D) * 4);
    } else {
      for (int64_t d = 0; d < D; ++d) y[d] = cpu_act::widened(x[d]);
    }
  }
}

// out: fp32, or bf16 (each fp32 value rounded once to nearest even, from a per-thread fp32 tile);
// qkv: fp32, or bf16 (widened exactly).
template <class Out, class In>
void attention_forward(const AttentionShape& s, Out* out, float* lse, const In* qkv) {
  constexpr bool kBf16Out = std::is_same_v<Out, uint16_t>;
  const int64_t T = s.seq, D = s.head_dim, Hq = s.q_heads, S = s.qkv_stride();
  const int64_t group = Hq / s.kv_heads, blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const float scale = s.scale();
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(kQueryBlock * T)), row_max(kQueryBlock), row_sum(kQueryBlock);
    std::vector<float> out_tile(kBf16Out ? static_cast<size_t>(kQueryBlock * D) : 0), qb, kb, vb;
    int64_t lo[kQueryBlock], hi[kQueryBlock];
#pragma omp for collapse(3) schedule(dynamic, 1)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < Hq; ++h) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const int64_t q0 = blk * kQueryBlock, rows = std::min(kQueryBlock, T - q0), kend = q0 + rows;
          // The block's GEMMs span keys [kbeg, kend); row r sees its [lo, hi) of them.
          const int64_t kbeg = visible_keys(s, b, q0, rows, lo, hi), kw = kend - kbeg;
          const In* base = qkv + b * T * S;
          head_rows(base + q0 * S + h * D, S, rows, D, qb);
          head_rows(base + kbeg * S + Hq * D + (h / group) * D, S, kw, D, kb);
          head_rows(base + kbeg * S + (Hq + s.kv_heads) * D + (h / group) * D, S, kw, D, vb);
          const float *q = qb.data(), *k0 = kb.data(), *v0 = vb.data();
          // p (rows, kw) = q k^T
          gemm(rows, kw, D, q, D, Trans::kN, k0, D, Trans::kT, p.data(), kw, false);
          for (int64_t r = 0; r < rows; ++r) {
            float* pr = p.data() + r * kw;
#pragma omp simd
            for (int64_t j = lo[r]; j < hi[r]; ++j) pr[j] *= scale;
            row_max[size_t(r)] = max_of(pr + lo[r], hi[r] - lo[r]);
            const float m = row_max[size_t(r)];
#pragma omp simd
            for (int64_t j = lo[r]; j < hi[r]; ++j) pr[j] = numerics::softmax_numerator_f32(pr[j], m);
          }
          row_sums_in_key_order(p.data(), kw, rows, lo, hi, row_sum.data());
          for (int64_t r = 0; r < rows; ++r) {
            float* pr = p.data() + r * kw;
            const float inv = 1.0f / row_sum[size_t(r)];
#pragma omp simd
            for (int64_t j = lo[r]; j < hi[r]; ++j) pr[j] *= inv;
            std::fill(pr, pr + lo[r], 0.0f);
            std::fill(pr + hi[r], pr + kw, 0.0f);
            lse[(b * Hq + h) * T + q0 + r] = row_max[size_t(r)] + std::log(row_sum[size_t(r)]);
          }
          // out (rows, D) = p v
          Out* o = out + (b * T + q0) * Hq * D + h * D;
          if constexpr (kBf16Out) {
            gemm(rows, D, kw, p.data(), kw, Trans::kN, v0, D, Trans::kN, out_tile.data(), D, false);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t d = 0; d < D; ++d) cpu_act::store(o + r * Hq * D + d, out_tile[size_t(r * D + d)]);
            }
          } else {
            gemm(rows, D, kw, p.data(), kw, Trans::kN, v0, D, Trans::kN, o, Hq * D, false);
          }
        }
      }
    }
  }
}

// G: the gradients' storage (dout read, dqkv written): fp32, or bf16 under bf16 activations.
// NOTE: dO's head rows go through dense blocks and dq through a dense tile whatever G is, as qkv
// does (head_rows): so a bf16 dout, and a bf16 dqkv, give the bits of their fp32 counterparts
// holding the same values (widened in, rounded out).
template <class G, class Out, class In>
void attention_backward(const AttentionShape& s, G* dqkv, float* scratch, const G* dout, const Out* out,
                        const float* lse, const In* qkv) {
  const int64_t T = s.seq, D = s.head_dim, Hq = s.q_heads, Hkv = s.kv_heads, S = s.qkv_stride();
  const int64_t group = Hq / Hkv, blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const float scale = s.scale();
  float* dk_all = scratch;                         // (B, Hq, T, D)
  float* dv_all = scratch + s.batch * Hq * T * D;  // (B, Hq, T, D)
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(kQueryBlock * T)), dp(static_cast<size_t>(kQueryBlock * T));
    std::vector<float> o_widened(static_cast<size_t>(D)), dq(static_cast<size_t>(kQueryBlock * D)), qb, kb, vb, gb;
    int64_t lo[kQueryBlock], hi[kQueryBlock];
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < Hq; ++h) {
        const In* base = qkv + b * T * S;
        head_rows(base + Hq * D + (h / group) * D, S, T, D, kb);
        head_rows(base + (Hq + Hkv) * D + (h / group) * D, S, T, D, vb);
        const float *k0 = kb.data(), *v0 = vb.data();
        float* dk = dk_all + (b * Hq + h) * T * D;
        float* dv = dv_all + (b * Hq + h) * T * D;
        std::memset(dk, 0, size_t(T * D) * 4);
        std::memset(dv, 0, size_t(T * D) * 4);
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const int64_t q0 = blk * kQueryBlock, rows = std::min(kQueryBlock, T - q0), kend = q0 + rows;
          const int64_t kbeg = visible_keys(s, b, q0, rows, lo, hi), kw = kend - kbeg;
          const float *kk = k0 + kbeg * D, *vk = v0 + kbeg * D;
          head_rows(base + q0 * S + h * D, S, rows, D, qb);
          head_rows(dout + (b * T + q0) * Hq * D + h * D, Hq * D, rows, D, gb);
          const float *q = qb.data(), *go = gb.data();
          const Out* o = out + (b * T + q0) * Hq * D + h * D;
          // p = softmax(q k^T * scale) recomputed from the saved log-sum-exp; dp = dO v^T
          gemm(rows, kw, D, q, D, Trans::kN, kk, D, Trans::kT, p.data(), kw, false);
          gemm(rows, kw, D, go, D, Trans::kN, vk, D, Trans::kT, dp.data(), kw, false);
          for (int64_t r = 0; r < rows; ++r) {
            float* pr = p.data() + r * kw;
            float* dr = dp.data() + r * kw;
            const float l = lse[(b * Hq + h) * T + q0 + r];
            const float di = dot(go + r * D, cpu_act::row_f32(o + r * Hq * D, o_widened.data(), D), D);
#pragma omp simd
            for (int64_t j = lo[r]; j < hi[r]; ++j) {
              pr[j] = numerics::attention_prob_from_lse_f32(pr[j], scale, l);
              dr[j] = numerics::attention_ds_f32(pr[j], dr[j], di, scale);
            }
            for (int64_t j = 0; j < lo[r]; ++j) pr[j] = dr[j] = 0.0f;
            for (int64_t j = hi[r]; j < kw; ++j) pr[j] = dr[j] = 0.0f;
          }
          // dq = ds k; dk += ds^T q; dv += p^T dO
          gemm(rows, D, kw, dp.data(), kw, Trans::kN, kk, D, Trans::kN, dq.data(), D, false);
          for (int64_t r = 0; r < rows; ++r) {
            G* dqr = dqkv + (b * T + q0 + r) * S + h * D;
            for (int64_t d = 0; d < D; ++d) cpu_act::store(dqr + d, dq[size_t(r * D + d)]);
          }
          gemm(kw, D, rows, dp.data(), kw, Trans::kT, q, D, Trans::kN, dk + kbeg * D, D, true);
          gemm(kw, D, rows, p.data(), kw, Trans::kT, go, D, Trans::kN, dv + kbeg * D, D, true);
        }
      }
    }
    // Sum each group's per-query-head dk/dv into the kv head, in head order, then store.
    std::vector<float> dk_sum(static_cast<size_t>(D)), dv_sum(static_cast<size_t>(D));
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t t = 0; t < T; ++t) {
        G* row = dqkv + (b * T + t) * S;
        for (int64_t kh = 0; kh < Hkv; ++kh) {
          for (int64_t g = 0; g < group; ++g) {
            const int64_t h = kh * group + g;
            const float* sk = dk_all + ((b * Hq + h) * T + t) * D;
            const float* sv = dv_all + ((b * Hq + h) * T + t) * D;
#pragma omp simd
            for (int64_t d = 0; d < D; ++d) {
              dk_sum[size_t(d)] = g == 0 ? sk[d] : dk_sum[size_t(d)] + sk[d];
              dv_sum[size_t(d)] = g == 0 ? sv[d] : dv_sum[size_t(d)] + sv[d];
            }
          }
          G* dkr = row + Hq * D + kh * D;
          G* dvr = row + (Hq + Hkv) * D + kh * D;
          for (int64_t d = 0; d < D; ++d) {
            cpu_act::store(dkr + d, dk_sum[size_t(d)]);
            cpu_act::store(dvr + d, dv_sum[size_t(d)]);
          }
        }
      }
    }
  }
}

}  // namespace

void attention_forward_cpu(const AttentionShape& s, float* out, float* lse, const float* qkv) {
  attention_forward(s, out, lse, qkv);
}
void attention_forward_cpu(const AttentionShape& s, uint16_t* out, float* lse, const float* qkv) {
  attention_forward(s, out, lse, qkv);
}
void attention_forward_cpu(const AttentionShape& s, uint16_t* out, float* lse, const uint16_t* qkv) {
  attention_forward(s, out, lse, qkv);
}
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const float* out, const float* lse, const float* qkv) {
  attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
}
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const uint16_t* out, const float* lse, const float* qkv) {
  attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
}
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const uint16_t* out, const float* lse, const uint16_t* qkv) {
  attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
}
void attention_backward_cpu(const AttentionShape& s, uint16_t* dqkv, float* scratch, const uint16_t* dout,
                            const uint16_t* out, const float* lse, const uint16_t* qkv) {
  attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
}

void attention_decode_cpu(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                          int64_t first_position, const float* k_cache, const float* v_cache) {
  const int64_t D = s.head_dim, Hq = s.q_heads, Sq = s.qkv_stride(), kv_row = s.kv_heads * D;
  const int64_t group = Hq / s.kv_heads;
  // NOTE: the training kernel's order: score = (q . k) * scale, exact max-subtracted softmax
  // in fp32, out = sum_j p_j v_j.
  const float scale = s.scale();
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(first_position + rows));
#pragma omp for collapse(2) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < Hq; ++h) {
        // causal: keys at positions first..first_position + r (first > 0 under a sliding window)
        const int64_t valid = first_position + r + 1, first = numerics::attention_first_key(first_position + r, s.window);
        const float* q = qkv + r * Sq + h * D;
        const int64_t kv_head = h / group;
        for (int64_t j = first; j < valid; ++j) {
          const float* kj = k_cache + j * kv_row + kv_head * D;
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * kj[d];
          p[size_t(j)] = dot * scale;
        }
        float* pj = p.data();
        const float m = max_of(pj + first, valid - first);
#pragma omp simd
        for (int64_t j = first; j < valid; ++j) pj[j] = numerics::softmax_numerator_f32(pj[j], m);
        float sum = 0.0f;
        for (int64_t j = first; j < valid; ++j) sum += pj[j];  // in key order, as the training kernel
        const float inv = 1.0f / sum;
        float* o = out + r * Hq * D + h * D;
        std::fill(o, o + D, 0.0f);
        for (int64_t j = first; j < valid; ++j) {
          const float pj = p[size_t(j)] * inv;
          const float* vj = v_cache + j * kv_row + kv_head * D;
          for (int64_t d = 0; d < D; ++d) o[d] += pj * vj[d];
        }
      }
    }
  }
}

}  // namespace farthing::kernels

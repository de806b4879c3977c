// attention_cuda.cu — see attention_cuda.h.
//
// Tiles are kTile = 32 rows of head_dim floats in shared memory, padded to head_dim + 1 so
// that 32 lanes reading 32 different rows at one column hit 32 banks. A block has 4 warps; in
// the forward and dQ kernels warp w owns query rows 8w .. 8w + 7 of its tile, in the dK/dV
// kernel key rows 8w .. 8w + 7; lane l owns columns l, l + 32, ... of those rows' accumulators
// (DC = ceil(head_dim / 32) registers per row). Scores are q.k summed over d in order, then
// scaled (the CPU's definition: score = (q . k) * scale). With document starts
// (AttentionShape::doc_start), query qi of sequence b sees keys first_key(b, qi) .. qi: the key
// loops start at the tile holding the query tile's first visible key (starts never decrease
// within a sequence, so the tile's first row has the smallest).
#include "kernels/cuda/attention_cuda.h"

#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/attention_steps.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr int kTile = 32;
constexpr int kAttnThreads = 128;
constexpr int kRowsPerWarp = kTile / (kAttnThreads / 32);  // 8

struct Geometry {
  int64_t T;
  int Hq, Hkv, D;
  float scale;
  int64_t window;            // AttentionShape::window: 0, or each query's sliding window of keys
  const int32_t* doc_start;  // AttentionShape::doc_start: null, or (B*T) in device memory
  __device__ int64_t stride() const { return int64_t(Hq + 2 * Hkv) * D; }
  __device__ int kv_head(int h) const { return h / (Hq / Hkv); }
  // The first key query qi (< T) of sequence b may see: AttentionShape::first_key's rule, the later
  // of its document's start and its sliding window's first key.
  __device__ int64_t first_key(int b, int64_t qi) const {
    const int64_t document = doc_start ? int64_t(doc_start[b * T + qi]) : 0;
    const int64_t windowed = nm::attention_first_key(qi, window);
    return document > windowed ? document : windowed;
  }
  // The first key tile any query of the tile starting at q0 sees.
  __device__ int64_t first_key_tile(int b, int64_t q0) const { return first_key(b, q0) / kTile * kTile; }
};

// dst (kTile rows, ld) <- rows row0 .. row0 + kTile - 1 of src (rows src_stride apart, D columns);
// rows at or past `limit` are zeros.
__device__ void load_tile(float* dst, int ld, const float* src, int64_t src_stride, int64_t row0, int64_t limit,
                          int D) {
  for (int e = threadIdx.x; e < kTile * D; e += kAttnThreads) {
    const int i = e / D, d = e - i * D;
    const int64_t row = row0 + i;
    dst[i * ld + d] = row < limit ? src[row * src_stride + d] : 0.0f;
  }
}

__device__ float dot_in_order(const float* a, const float* b, int D) {
  float acc = 0.0f;
  for (int d = 0; d < D; ++d) acc += a[d] * b[d];
  return acc;
}

template <int DC>
__global__ void __launch_bounds__(kAttnThreads)
attention_forward_kernel(Geometry g, float* out, float* lse, const float* qkv) {
  extern __shared__ float shared[];
  const int D = g.D, ld = D + 1, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* Qs = shared;
  float* Ks = Qs + kTile * ld;
  float* Vs = Ks + kTile * ld;
  float* Ps = Vs + kTile * ld;  // kTile x kTile
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t q0 = int64_t(blockIdx.x) * kTile, T = g.T, S = g.stride();
  const float* base = qkv + int64_t(b) * T * S;
  const float* ksrc = base + int64_t(g.Hq) * D + int64_t(g.kv_head(h)) * D;
  const float* vsrc = ksrc + int64_t(g.Hkv) * D;
  load_tile(Qs, ld, base + int64_t(h) * D, S, q0, T, D);

  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][DC];
#pragma unroll
  for (int ii = 0; ii < kRowsPerWarp; ++ii) {
    m[ii] = -INFINITY;
    l[ii] = 0.0f;
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) o[ii][dc] = 0.0f;
  }
  const int64_t kend = q0 + kTile < T ? q0 + kTile : T;  // causal: no row of this tile sees past kend
  for (int64_t k0 = g.first_key_tile(b, q0); k0 < kend; k0 += kTile) {
    __syncthreads();  // the previous tile's K / V are no longer read
    load_tile(Ks, ld, ksrc, S, k0, T, D);
    load_tile(Vs, ld, vsrc, S, k0, T, D);
    __syncthreads();
#pragma unroll
    for (int ii = 0; ii < kRowsPerWarp; ++ii) {
      const int i = warp * kRowsPerWarp + ii;
      const int64_t qi = q0 + i;
      if (qi >= T) continue;  // uniform across the warp
      const bool valid = k0 + lane <= qi && k0 + lane >= g.first_key(b, qi);
      const float s = valid ? dot_in_order(Qs + i * ld, Ks + lane * ld, D) * g.scale : -INFINITY;
      // A tile before the row's first key (its document's start, or its sliding window's) holds
      // no key it sees: m stays -inf and l, o stay 0 (p and alpha are 0, never exp(-inf - -inf));
      // the diagonal tile always holds one.
      const float m_new = fmaxf(m[ii], cuda_nn::warp_max(s));
      const float p = valid ? nm::softmax_numerator_f32(s, m_new) : 0.0f;
      const float alpha = m[ii] == -INFINITY ? 0.0f : nm::softmax_numerator_f32(m[ii], m_new);
      l[ii] = l[ii] * alpha + cuda_nn::warp_sum(p);
      m[ii] = m_new;
      Ps[i * kTile + lane] = p;
      __syncwarp();
#pragma unroll
      for (int dc = 0; dc < DC; ++dc) {
        const int d = lane + 32 * dc;
        if (d < D) {
          float acc = 0.0f;
          for (int j = 0; j < kTile; ++j) acc += Ps[i * kTile + j] * Vs[j * ld + d];
          o[ii][dc] = o[ii][dc] * alpha + acc;
        }
      }
      __syncwarp();
    }
  }
#pragma unroll
  for (int ii = 0; ii < kRowsPerWarp; ++ii) {
    const int64_t qi = q0 + warp * kRowsPerWarp + ii;
    if (qi >= T) continue;
    float* orow = out + (int64_t(b) * T + qi) * g.Hq * D + int64_t(h) * D;
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) {
      const int d = lane + 32 * dc;
      if (d < D) orow[d] = o[ii][dc] / l[ii];
    }
    if (lane == 0) lse[(int64_t(b) * g.Hq + h) * T + qi] = m[ii] + logf(l[ii]);
  }
}

// delta[(b, h, t)] = dO . O over the head's D columns, in order.
__global__ void __launch_bounds__(cuda_nn::kThreads)
attention_delta_kernel(Geometry g, int64_t batch, float* delta, const float* dout, const float* out) {
  const int64_t count = batch * g.Hq * g.T;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = e % g.T, bh = e / g.T, h = bh % g.Hq, b = bh / g.Hq;
    const int64_t offset = (b * g.T + t) * g.Hq * g.D + h * g.D;
    delta[e] = dot_in_order(dout + offset, out + offset, g.D);
  }
}

// Ps, dSs (kTile x kTile) for query tile q0 against key tile k0: p recomputed from the lse,
// ds = p (dp - delta) scale; zeros outside the causal triangle, before the query's first key
// (its document's start or its sliding window's) and past T.
__device__ void probabilities_and_score_grads(const Geometry& g, int b, int64_t q0, int64_t k0, const float* Qs,
                                              const float* dOs, const float* Ks, const float* Vs, const float* lse_s,
                                              const float* delta_s, float* Ps, float* dSs) {
  const int ld = g.D + 1;
  for (int e = threadIdx.x; e < kTile * kTile; e += kAttnThreads) {
    const int i = e / kTile, j = e - i * kTile;
    const int64_t qi = q0 + i, kj = k0 + j;
    float p = 0.0f, ds = 0.0f;
    if (qi < g.T && kj <= qi && kj >= g.first_key(b, qi)) {
      p = nm::attention_prob_from_lse_f32(dot_in_order(Qs + i * ld, Ks + j * ld, g.D), g.scale, lse_s[i]);
      ds = nm::attention_ds_f32(p, dot_in_order(dOs + i * ld, Vs + j * ld, g.D), delta_s[i], g.scale);
    }
    Ps[e] = p;
    dSs[e] = ds;
  }
}

// Loads the query-side tiles of query tile q0: Q, dO, and the rows' lse and delta.
__device__ void load_query_side(const Geometry& g, int b, int h, int64_t q0, const float* qkv, const float* dout,
                                const float* lse, const float* delta, float* Qs, float* dOs, float* lse_s,
                                float* delta_s) {
  const int D = g.D, ld = D + 1;
  const int64_t T = g.T, S = g.stride();
  load_tile(Qs, ld, qkv + int64_t(b) * T * S + int64_t(h) * D, S, q0, T, D);
  load_tile(dOs, ld, dout + int64_t(b) * T * g.Hq * D + int64_t(h) * D, int64_t(g.Hq) * D, q0, T, D);
  if (threadIdx.x < kTile) {
    const int64_t qi = q0 + threadIdx.x, row = (int64_t(b) * g.Hq + h) * T + qi;
    lse_s[threadIdx.x] = qi < T ? lse[row] : 0.0f;
    delta_s[threadIdx.x] = qi < T ? delta[row] : 0.0f;
  }
}

// Shared floats of the backward kernels: Q, dO, K, V tiles, P and dS, lse and delta.
__host__ __device__ inline int backward_shared_floats(int D) { return 4 * kTile * (D + 1) + 2 * kTile * kTile + 2 * kTile; }

// The backward kernels' shared memory, carved in that order: the Q, dO, K and V tiles (rows of
// ld = D + 1 floats), the P and dS tiles, lse and delta. One layout for both kernels.
struct BackwardTiles {
  float *Qs, *dOs, *Ks, *Vs, *Ps, *dSs, *lse_s, *delta_s;
};
__device__ inline BackwardTiles backward_tiles(float* shared, int ld) {
  BackwardTiles t;
  t.Qs = shared;
  t.dOs = t.Qs + kTile * ld;
  t.Ks = t.dOs + kTile * ld;
  t.Vs = t.Ks + kTile * ld;
  t.Ps = t.Vs + kTile * ld;
  t.dSs = t.Ps + kTile * kTile;
  t.lse_s = t.dSs + kTile * kTile;
  t.delta_s = t.lse_s + kTile;
  return t;
}

template <int DC>
__global__ void __launch_bounds__(kAttnThreads)
attention_dkdv_kernel(Geometry g, float* dk_heads, float* dv_heads, const float* dout, const float* lse,
                      const float* delta, const float* qkv) {
  extern __shared__ float shared[];
  const int D = g.D, ld = D + 1, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const auto [Qs, dOs, Ks, Vs, Ps, dSs, lse_s, delta_s] = backward_tiles(shared, ld);
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t k0 = int64_t(blockIdx.x) * kTile, T = g.T, S = g.stride();
  const float* ksrc = qkv + int64_t(b) * T * S + int64_t(g.Hq) * D + int64_t(g.kv_head(h)) * D;
  load_tile(Ks, ld, ksrc, S, k0, T, D);
  load_tile(Vs, ld, ksrc + int64_t(g.Hkv) * D, S, k0, T, D);
  float dk[kRowsPerWarp][DC], dv[kRowsPerWarp][DC];
#pragma unroll
  for (int jj = 0; jj < kRowsPerWarp; ++jj) {
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) dk[jj][dc] = dv[jj][dc] = 0.0f;
  }
  // Query tiles from the diagonal on (earlier queries never see these keys), in order, up to the
  // first whose rows' first keys (documents' starts, sliding windows) all lie past this key tile.
  for (int64_t q0 = k0; q0 < T; q0 += kTile) {
    if (g.first_key(b, q0) >= k0 + kTile) break;  // uniform across the block
    __syncthreads();
    load_query_side(g, b, h, q0, qkv, dout, lse, delta, Qs, dOs, lse_s, delta_s);
    __syncthreads();
    probabilities_and_score_grads(g, b, q0, k0, Qs, dOs, Ks, Vs, lse_s, delta_s, Ps, dSs);
    __syncthreads();
#pragma unroll
    for (int jj = 0; jj < kRowsPerWarp; ++jj) {
      const int j = warp * kRowsPerWarp + jj;
#pragma unroll
      for (int dc = 0; dc < DC; ++dc) {
        const int d = lane + 32 * dc;
        if (d < D) {
          float acc_v = dv[jj][dc], acc_k = dk[jj][dc];
          for (int i = 0; i < kTile; ++i) {
            acc_v += Ps[i * kTile + j] * dOs[i * ld + d];  // dV += P^T dO
            acc_k += dSs[i * kTile + j] * Qs[i * ld + d];  // dK += dS^T Q
          }
          dv[jj][dc] = acc_v;
          dk[jj][dc] = acc_k;
        }
      }
    }
  }
#pragma unroll
  for (int jj = 0; jj < kRowsPerWarp; ++jj) {
    const int64_t kj = k0 + warp * kRowsPerWarp + jj;
    if (kj >= T) continue;
    const int64_t row = ((int64_t(b) * g.Hq + h) * T + kj) * D;
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) {
      const int d = lane + 32 * dc;
      if (d < D) {
        dk_heads[row + d] = dk[jj][dc];
        dv_heads[row + d] = dv[jj][dc];
      }
    }
  }
}

template <int DC>
__global__ void __launch_bounds__(kAttnThreads)
attention_dq_kernel(Geometry g, float* dqkv, const float* dout, const float* lse, const float* delta,
                    const float* qkv) {
  extern __shared__ float shared[];
  const int D = g.D, ld = D + 1, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const auto [Qs, dOs, Ks, Vs, Ps, dSs, lse_s, delta_s] = backward_tiles(shared, ld);
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t q0 = int64_t(blockIdx.x) * kTile, T = g.T, S = g.stride();
  const float* ksrc = qkv + int64_t(b) * T * S + int64_t(g.Hq) * D + int64_t(g.kv_head(h)) * D;
  load_query_side(g, b, h, q0, qkv, dout, lse, delta, Qs, dOs, lse_s, delta_s);
  float dq[kRowsPerWarp][DC];
#pragma unroll
  for (int ii = 0; ii < kRowsPerWarp; ++ii) {
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) dq[ii][dc] = 0.0f;
  }
  const int64_t kend = q0 + kTile < T ? q0 + kTile : T;
  for (int64_t k0 = g.first_key_tile(b, q0); k0 < kend; k0 += kTile) {
    __syncthreads();
    load_tile(Ks, ld, ksrc, S, k0, T, D);
    load_tile(Vs, ld, ksrc + int64_t(g.Hkv) * D, S, k0, T, D);
    __syncthreads();
    probabilities_and_score_grads(g, b, q0, k0, Qs, dOs, Ks, Vs, lse_s, delta_s, Ps, dSs);
    __syncthreads();
#pragma unroll
    for (int ii = 0; ii < kRowsPerWarp; ++ii) {
      const int i = warp * kRowsPerWarp + ii;
#pragma unroll
      for (int dc = 0; dc < DC; ++dc) {
        const int d = lane + 32 * dc;
        if (d < D) {
          float acc = dq[ii][dc];
          for (int j = 0; j < kTile; ++j) acc += dSs[i * kTile + j] * Ks[j * ld + d];  // dQ += dS K
          dq[ii][dc] = acc;
        }
      }
    }
  }
#pragma unroll
  for (int ii = 0; ii < kRowsPerWarp; ++ii) {
    const int64_t qi = q0 + warp * kRowsPerWarp + ii;
    if (qi >= T) continue;
    float* row = dqkv + (int64_t(b) * T + qi) * S + int64_t(h) * D;
#pragma unroll
    for (int dc = 0; dc < DC; ++dc) {
      const int d = lane + 32 * dc;
      if (d < D) row[d] = dq[ii][dc];
    }
  }
}

// dqkv's k and v parts: each kv head's dK / dV is its group's per-query-head values summed in
// head order (the first overwrites), as attention_backward_cpu.
__global__ void __launch_bounds__(cuda_nn::kThreads)
attention_group_sum_kernel(Geometry g, int64_t batch, float* dqkv, const float* dk_heads, const float* dv_heads) {
  const int D = g.D, group = g.Hq / g.Hkv;
  const int64_t count = batch * g.T * g.Hkv * D, S = g.stride();
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = e % D, rest = e / D, kh = rest % g.Hkv, row = rest / g.Hkv, t = row % g.T, b = row / g.T;
    float acc_k = 0.0f, acc_v = 0.0f;
    for (int gi = 0; gi < group; ++gi) {
      const int64_t src = ((b * g.Hq + kh * group + gi) * g.T + t) * D + d;
      acc_k = gi == 0 ? dk_heads[src] : acc_k + dk_heads[src];
      acc_v = gi == 0 ? dv_heads[src] : acc_v + dv_heads[src];
    }
    dqkv[row * S + int64_t(g.Hq) * D + kh * D + d] = acc_k;
    dqkv[row * S + int64_t(g.Hq + g.Hkv) * D + kh * D + d] = acc_v;
  }
}

// One block per (query row, head); every sum in attention_decode_cpu's order.
__global__ void __launch_bounds__(kAttnThreads)
attention_decode_kernel(int Hq, int Hkv, int D, float scale, int64_t window, float* out, const float* qkv,
                        int64_t first_position, int64_t scores_per_row, const float* k_cache, const float* v_cache,
                        float* scores) {
  __shared__ float shared[kAttnThreads];
  __shared__ float inv_sum;
  const int64_t r = blockIdx.x;
  const int h = blockIdx.y, kv_head = h / (Hq / Hkv);
  const int64_t valid = first_position + r + 1, kv_row = int64_t(Hkv) * D;
  const int64_t first = nm::attention_first_key(first_position + r, window);  // keys first .. valid - 1
  const float* q = qkv + r * int64_t(Hq + 2 * Hkv) * D + int64_t(h) * D;
  float* p = scores + (r * Hq + h) * scores_per_row;
  float local_max = -INFINITY;
  for (int64_t j = first + threadIdx.x; j < valid; j += kAttnThreads) {
    p[j] = dot_in_order(q, k_cache + j * kv_row + int64_t(kv_head) * D, D) * scale;
    local_max = fmaxf(local_max, p[j]);
  }
  const float m = cuda_nn::block_max(local_max, shared);
  for (int64_t j = first + threadIdx.x; j < valid; j += kAttnThreads) p[j] = nm::softmax_numerator_f32(p[j], m);
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int64_t j = first; j < valid; ++j) sum += p[j];  // in key order, as the CPU
    inv_sum = 1.0f / sum;
  }
  __syncthreads();
  const float inv = inv_sum;
  for (int d = threadIdx.x; d < D; d += kAttnThreads) {
    float o = 0.0f;
    for (int64_t j = first; j < valid; ++j) o += (p[j] * inv) * v_cache[j * kv_row + int64_t(kv_head) * D + d];
    out[r * int64_t(Hq) * D + int64_t(h) * D + d] = o;
  }
}

// The shape's preconditions (attention_cuda.h) are checked by the caller, CudaNnOps.
Geometry geometry_of(const AttentionShape& s) {
  return Geometry{s.seq, int(s.q_heads), int(s.kv_heads), int(s.head_dim), s.scale(),
                  s.window, s.doc_start};
}

// Launches kernel<DC> for DC = ceil(D / 32) with `shared_floats` of dynamic shared memory,
// raising the kernel's limit past the default 48 KiB where needed (a host-side attribute, no sync).
template <template <int> class Launch, class... Args>
void dispatch_head_dim(int D, Args&&... args) {
  switch ((D + 31) / 32) {
    case 1: Launch<1>::run(args...); break;
    case 2: Launch<2>::run(args...); break;
    case 3: Launch<3>::run(args...); break;
    default: Launch<4>::run(args...); break;
  }
}

template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024) {
    FARTHING_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  }
}

template <int DC>
struct ForwardLaunch {
  static void run(const Geometry& g, dim3 grid, float* out, float* lse, const float* qkv, cudaStream_t stream) {
    const size_t bytes = size_t(3 * kTile * (g.D + 1) + kTile * kTile) * sizeof(float);
    allow_shared(attention_forward_kernel<DC>, bytes);
    attention_forward_kernel<DC><<<grid, kAttnThreads, bytes, stream>>>(g, out, lse, qkv);
    cuda_nn::check_launch();
  }
};

template <int DC>
struct BackwardLaunch {
  static void run(const Geometry& g, dim3 grid, float* dqkv, float* dk_heads, float* dv_heads, const float* dout,
                  const float* lse, const float* delta, const float* qkv, cudaStream_t stream) {
    const size_t bytes = size_t(backward_shared_floats(g.D)) * sizeof(float);
    allow_shared(attention_dkdv_kernel<DC>, bytes);
    allow_shared(attention_dq_kernel<DC>, bytes);
    attention_dkdv_kernel<DC><<<grid, kAttnThreads, bytes, stream>>>(g, dk_heads, dv_heads, dout, lse, delta, qkv);
    cuda_nn::check_launch();
    attention_dq_kernel<DC><<<grid, kAttnThreads, bytes, stream>>>(g, dqkv, dout, lse, delta, qkv);
    cuda_nn::check_launch();
  }
};

dim3 tile_grid(const AttentionShape& s) {
  return dim3(unsigned((s.seq + kTile - 1) / kTile), unsigned(s.q_heads), unsigned(s.batch));
}

}  // namespace

void attention_forward_cuda(const AttentionShape& s, float* out, float* lse, const float* qkv, cudaStream_t stream) {
  const Geometry g = geometry_of(s);
  if (s.batch * s.seq == 0) return;
  dispatch_head_dim<ForwardLaunch>(g.D, g, tile_grid(s), out, lse, qkv, stream);
}

int64_t attention_backward_extra_floats(const AttentionShape& s) { return s.batch * s.q_heads * s.seq; }

void attention_backward_cuda(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                             const float* out, const float* lse, const float* qkv, float* extra, cudaStream_t stream) {
  const Geometry g = geometry_of(s);
  if (s.batch * s.seq == 0) return;
  float* dk_heads = scratch;
  float* dv_heads = scratch + s.batch * s.q_heads * s.seq * s.head_dim;
  const int64_t rows = s.batch * s.q_heads * s.seq;
  attention_delta_kernel<<<cuda_nn::blocks_for(rows), cuda_nn::kThreads, 0, stream>>>(g, s.batch, extra, dout, out);
  cuda_nn::check_launch();
  dispatch_head_dim<BackwardLaunch>(g.D, g, tile_grid(s), dqkv, dk_heads, dv_heads, dout, lse, extra, qkv, stream);
  const int64_t count = s.batch * s.seq * s.kv_heads * s.head_dim;
  attention_group_sum_kernel<<<cuda_nn::blocks_for(count), cuda_nn::kThreads, 0, stream>>>(g, s.batch, dqkv,
                                                                                         dk_heads, dv_heads);
  cuda_nn::check_launch();
}

int64_t attention_decode_scratch_floats(const AttentionShape& s, int64_t rows, int64_t first_position) {
  return rows * s.q_heads * (first_position + rows);
}

void attention_decode_cuda(const AttentionShape& s, float* out, const float* qkv, int64_t rows, int64_t first_position,
                           const float* k_cache, const float* v_cache, float* scores, cudaStream_t stream) {
  const Geometry g = geometry_of(s);
  if (rows <= 0) return;
  const dim3 grid(unsigned(rows), unsigned(s.q_heads));
  attention_decode_kernel<<<grid, kAttnThreads, 0, stream>>>(g.Hq, g.Hkv, g.D, g.scale, g.window, out, qkv, first_position,
                                                            first_position + rows, k_cache, v_cache, scores);
  cuda_nn::check_launch();
}

}  // namespace farthing::kernels

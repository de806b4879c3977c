// norm_cuda.cu — see norm_cuda.h. One block of kThreads per row: thread t sums channels
// t, t + kThreads, ... in order, then the block tree adds the per-thread sums.
#include "kernels/cuda/norm_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/norm_steps.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::kThreads;

namespace {

// In: how x (the residual stream) is stored; Out: the output's storage.
template <class Out, class In>
__global__ void __launch_bounds__(kThreads)
rmsnorm_forward_kernel(Out* out, float* rstd, const In* x, const float* w, int64_t c, float eps) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x;
  const In* xr = x + r * c;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    const float xi = cuda_nn::load_f32(xr + i);
    acc += xi * xi;
  }
  const float s = nm::norm_rstd_f32(cuda_nn::block_sum(acc, shared), float(c), eps);
  if (threadIdx.x == 0) rstd[r] = s;
  Out* o = out + r * c;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    cuda_nn::store_f32(o + i, nm::rmsnorm_out_f32(cuda_nn::load_f32(xr + i), s, w[i]));
  }
}

// RMSNorm's whole backward in one kernel. Block b owns the rows of column-sum chunk b
// (cuda_nn::kColumnChunkRows rows, nn_cuda_common.cuh) and takes them in row order: for each row
// the block's fixed tree sums w dy x, then each thread writes dx for its channels and adds the
// row's dw terms to its channels' chunk sums (dw_acc). The chunk sums are then those of
// cuda_nn::column_sum_accumulate, in the same order: with one chunk dw_acc starts at dw and the
// rows add into it in row order (the CPU's order); with several, each block stores its chunk's sum
// in partial[b], and the last block to finish (a ticket from *blocks_done, which the host zeroes)
// adds the chunks in chunk order into dw.
// dw_acc: c floats of shared memory where they fit (c <= 12,031), else the block's row
// of partial (or dw itself with one chunk); each thread only ever touches its own channels.
// T: how dx, dout and x are stored (fp32, or bf16 under bf16 activations: dout and x widened,
// each dx value widened, added to and rounded once).
template <class T>
__global__ void __launch_bounds__(kThreads)
rmsnorm_backward_kernel(T* dx, float* dw, float* partial, unsigned* blocks_done, const T* dout, const T* x,
                        const float* w, const float* rstd, int64_t n, int64_t c, bool dw_in_shared) {
  // All of the block's shared memory is the one dynamic array, laid out by hand: the tree's
  // kThreads floats, the last-block flag, then (dw_in_shared) the c dw sums. (GPGPU-Sim places a
  // kernel's dynamic shared array over its static ones, where a GPU puts it after them.)
  extern __shared__ float dynamic_shared[];
  float* const shared = dynamic_shared;
  unsigned* const last_block = reinterpret_cast<unsigned*>(dynamic_shared + kThreads);
  float* const dw_shared = dynamic_shared + kThreads + 1;
  const int64_t chunks = cuda_nn::column_chunks(n);
  const int64_t chunk = blockIdx.x;
  const int64_t r0 = chunk * cuda_nn::kColumnChunkRows;
  const int64_t r1 = r0 + cuda_nn::kColumnChunkRows < n ? r0 + cuda_nn::kColumnChunkRows : n;
  float* const chunk_sum = chunks == 1 ? dw : partial + chunk * c;
  float* const dw_acc = dw_in_shared ? dw_shared : chunk_sum;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) dw_acc[i] = chunks == 1 ? dw[i] : 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * c;
    const T* g = dout + r * c;
    float acc = 0.0f;  // sum_i w_i dy_i x_i
    for (int64_t i = threadIdx.x; i < c; i += kThreads) acc += w[i] * cuda_nn::load_f32(g + i) * cuda_nn::load_f32(xr + i);
    const float s = rstd[r];
    const float k = nm::rmsnorm_dx_coeff_f32(cuda_nn::block_sum(acc, shared), s, float(c));
    T* d = dx + r * c;
    for (int64_t i = threadIdx.x; i < c; i += kThreads) {
      const float gi = cuda_nn::load_f32(g + i), xi = cuda_nn::load_f32(xr + i);
      cuda_nn::store_f32(d + i, cuda_nn::load_f32(d + i) + nm::rmsnorm_dx_f32(w[i], gi, xi, s, k));
      dw_acc[i] += nm::rmsnorm_dw_term_f32(gi, xi, s);
    }
  }
  if (dw_in_shared) {
    for (int64_t i = threadIdx.x; i < c; i += kThreads) chunk_sum[i] = dw_acc[i];
  }
  if (chunks == 1) return;
  // Publish this block's chunk sum, then take a ticket; the block with the last ticket sees
  // every chunk's sum (the fence orders each block's stores before its ticket).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) *last_block = atomicAdd(blocks_done, 1u) == unsigned(chunks - 1) ? 1u : 0u;
  __syncthreads();
  if (*last_block == 0u) return;
  __threadfence();
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    const volatile float* p = partial;  // written by other blocks: read through to memory
    float sum = p[i];
    for (int64_t k = 1; k < chunks; ++k) sum += p[k * c + i];
    dw[i] += sum;
  }
}

template <class Out, class In>
__global__ void __launch_bounds__(kThreads)
layernorm_forward_kernel(Out* out, float* mean, float* rstd, const In* x, const float* w, const float* b,
                         int64_t c, float eps) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x;
  const In* xr = x + r * c;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) acc += cuda_nn::load_f32(xr + i);
  const float m = cuda_nn::block_sum(acc, shared) / float(c);
  float var = 0.0f;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) var += nm::layernorm_dev2_f32(cuda_nn::load_f32(xr + i), m);
  const float s = nm::norm_rstd_f32(cuda_nn::block_sum(var, shared), float(c), eps);
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = s;
  }
  Out* o = out + r * c;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    cuda_nn::store_f32(o + i, nm::layernorm_out_f32(cuda_nn::load_f32(xr + i), m, s, w[i], b[i]));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
layernorm_backward_dx_kernel(T* dx, const T* dout, const T* x, const float* w, const float* mean,
                             const float* rstd, int64_t c) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * c;
  const T* g = dout + r * c;
  const float m = mean[r], s = rstd[r];
  float acc_mean = 0.0f, acc_norm_mean = 0.0f;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    const float dn = w[i] * cuda_nn::load_f32(g + i);
    acc_mean += dn;
    acc_norm_mean += dn * nm::layernorm_norm_f32(cuda_nn::load_f32(xr + i), m, s);
  }
  const float dn_mean = cuda_nn::block_sum(acc_mean, shared) / float(c);
  const float dn_norm_mean = cuda_nn::block_sum(acc_norm_mean, shared) / float(c);
  T* d = dx + r * c;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    const float norm = nm::layernorm_norm_f32(cuda_nn::load_f32(xr + i), m, s);
    const float dxi = nm::layernorm_dx_f32(w[i], cuda_nn::load_f32(g + i), norm, dn_mean, dn_norm_mean, s);
    cuda_nn::store_f32(d + i, cuda_nn::load_f32(d + i) + dxi);
  }
}

// The per-(row, channel) terms of LayerNorm's weight gradient, for cuda_nn::column_sum_accumulate.
template <class T>
struct LayernormDwTerm {
  const T *dout, *x;
  const float *mean, *rstd;
  int64_t c;
  __device__ float operator()(int64_t r, int64_t i) const {
    return cuda_nn::load_f32(dout + r * c + i) *
           nm::layernorm_norm_f32(cuda_nn::load_f32(x + r * c + i), mean[r], rstd[r]);
  }
};

// Dynamic shared memory a kernel may use without opting in to more.
constexpr int64_t kSharedBytes = 48 * 1024;

template <class T>
void rmsnorm_backward_launch(T* dx, float* dw, const T* dout, const T* x, const float* w, const float* rstd,
                             int64_t n, int64_t c, float* scratch, cudaStream_t stream) {
  if (n <= 0) return;
  const int64_t chunks = cuda_nn::column_chunks(n);
  float* partial = chunks > 1 ? scratch : nullptr;
  unsigned* blocks_done = chunks > 1 ? reinterpret_cast<unsigned*>(scratch + chunks * c) : nullptr;
  if (blocks_done != nullptr) FARTHING_CUDA_CHECK(cudaMemsetAsync(blocks_done, 0, sizeof(unsigned), stream));
  const int64_t fixed_bytes = (kThreads + 1) * int64_t(sizeof(float));  // the tree and the flag
  const bool dw_in_shared = fixed_bytes + c * int64_t(sizeof(float)) <= kSharedBytes;
  const size_t shared_bytes = size_t(fixed_bytes + (dw_in_shared ? c * int64_t(sizeof(float)) : 0));
  rmsnorm_backward_kernel<<<unsigned(chunks), kThreads, shared_bytes, stream>>>(
      dx, dw, partial, blocks_done, dout, x, w, rstd, n, c, dw_in_shared);
  cuda_nn::check_launch();
}

template <class T>
void layernorm_backward_launch(T* dx, float* dw, float* db, const T* dout, const T* x, const float* w,
                               const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                               cudaStream_t stream) {
  if (n <= 0) return;
  layernorm_backward_dx_kernel<<<unsigned(n), kThreads, 0, stream>>>(dx, dout, x, w, mean, rstd, c);
  cuda_nn::check_launch();
  // The two column sums run one after the other on the stream, so they may share the scratch.
  cuda_nn::column_sum_accumulate(dw, scratch, n, c, LayernormDwTerm<T>{dout, x, mean, rstd, c}, stream);
  cuda_nn::column_sum_accumulate(db, scratch, n, c, cuda_nn::StridedRowTerm<T>{dout, c}, stream);
}

template <class Out, class In>
void rmsnorm_forward_launch(Out* out, float* rstd, const In* x, const float* w, int64_t n, int64_t c, float eps,
                            cudaStream_t stream) {
  if (n <= 0) return;
  rmsnorm_forward_kernel<<<unsigned(n), kThreads, 0, stream>>>(out, rstd, x, w, c, eps);
  cuda_nn::check_launch();
}

template <class Out, class In>
void layernorm_forward_launch(Out* out, float* mean, float* rstd, const In* x, const float* w, const float* b,
                              int64_t n, int64_t c, float eps, cudaStream_t stream) {
  if (n <= 0) return;
  layernorm_forward_kernel<<<unsigned(n), kThreads, 0, stream>>>(out, mean, rstd, x, w, b, c, eps);
  cuda_nn::check_launch();
}

}  // namespace

int64_t norm_backward_scratch_floats(int64_t n, int64_t c) {
  // The chunk sums, and one word more for the RMSNorm backward's count of finished blocks.
  const int64_t sums = cuda_nn::column_sum_scratch_floats(n, c);
  return sums > 0 ? sums + 1 : 0;
}

void rmsnorm_forward_cuda(float* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c, float eps,
                          cudaStream_t stream) {
  rmsnorm_forward_launch(out, rstd, x, w, n, c, eps, stream);
}
void rmsnorm_forward_cuda(uint16_t* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c, float eps,
                          cudaStream_t stream) {
  rmsnorm_forward_launch(out, rstd, x, w, n, c, eps, stream);
}
void rmsnorm_forward_cuda(uint16_t* out, float* rstd, const uint16_t* x, const float* w, int64_t n, int64_t c,
                          float eps, cudaStream_t stream) {
  rmsnorm_forward_launch(out, rstd, x, w, n, c, eps, stream);
}

void rmsnorm_backward_cuda(float* dx, float* dw, const float* dout, const float* x, const float* w,
                           const float* rstd, int64_t n, int64_t c, float* scratch, cudaStream_t stream) {
  rmsnorm_backward_launch(dx, dw, dout, x, w, rstd, n, c, scratch, stream);
}
void rmsnorm_backward_cuda(uint16_t* dx, float* dw, const uint16_t* dout, const uint16_t* x, const float* w,
                           const float* rstd, int64_t n, int64_t c, float* scratch, cudaStream_t stream) {
  rmsnorm_backward_launch(dx, dw, dout, x, w, rstd, n, c, scratch, stream);
}

void layernorm_forward_cuda(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                            int64_t n, int64_t c, float eps, cudaStream_t stream) {
  layernorm_forward_launch(out, mean, rstd, x, w, b, n, c, eps, stream);
}
void layernorm_forward_cuda(uint16_t* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                            int64_t n, int64_t c, float eps, cudaStream_t stream) {
  layernorm_forward_launch(out, mean, rstd, x, w, b, n, c, eps, stream);
}
void layernorm_forward_cuda(uint16_t* out, float* mean, float* rstd, const uint16_t* x, const float* w,
                            const float* b, int64_t n, int64_t c, float eps, cudaStream_t stream) {
  layernorm_forward_launch(out, mean, rstd, x, w, b, n, c, eps, stream);
}

void layernorm_backward_cuda(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                             const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                             cudaStream_t stream) {
  layernorm_backward_launch(dx, dw, db, dout, x, w, mean, rstd, n, c, scratch, stream);
}
void layernorm_backward_cuda(uint16_t* dx, float* dw, float* db, const uint16_t* dout, const uint16_t* x,
                             const float* w, const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                             cudaStream_t stream) {
  layernorm_backward_launch(dx, dw, db, dout, x, w, mean, rstd, n, c, scratch, stream);
}

}  // namespace farthing::kernels

// head_norm_cuda.cu — see head_norm_cuda.h. Block (r, h) normalises head h of row r: thread t
// sums channels t, t + kThreads, ... in order, then the block tree adds the per-thread sums.
// Block (r, q_heads + k_heads) copies the row's v heads.
#include "kernels/cuda/head_norm_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/norm_steps.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::kThreads;

namespace {

template <class T>
__global__ void __launch_bounds__(kThreads)
head_rmsnorm_forward_kernel(HeadNormShape s, T* out, float* rstd, const T* x, const float* wq, const float* wk,
                            float eps) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x, h = blockIdx.y, D = s.head_dim, heads = s.q_heads + s.k_heads;
  if (h == heads) {  // the v heads pass through unchanged
    for (int64_t i = heads * D + threadIdx.x; i < s.stride; i += kThreads) out[r * s.stride + i] = x[r * s.stride + i];
    return;
  }
  const T* xh = x + r * s.stride + h * D;
  const float* w = h < s.q_heads ? wq : wk;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) {
    const float xi = cuda_nn::load_f32(xh + i);
    acc += xi * xi;
  }
  const float sr = nm::norm_rstd_f32(cuda_nn::block_sum(acc, shared), float(D), eps);
  if (threadIdx.x == 0) rstd[r * heads + h] = sr;
  T* o = out + r * s.stride + h * D;
  for (int64_t i = threadIdx.x; i < D; i += kThreads) {
    cuda_nn::store_f32(o + i, nm::rmsnorm_out_f32(cuda_nn::load_f32(xh + i), sr, w[i]));
  }
}

// In place: each thread reads and then overwrites only its own channels of d.
template <class T>
__global__ void __launch_bounds__(kThreads)
head_rmsnorm_backward_dx_kernel(HeadNormShape s, T* d, const T* x, const float* wq, const float* wk,
                                const float* rstd) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x, h = blockIdx.y, D = s.head_dim, heads = s.q_heads + s.k_heads;
  const T* xh = x + r * s.stride + h * D;
  T* dh = d + r * s.stride + h * D;
  const float* w = h < s.q_heads ? wq : wk;
  float acc = 0.0f;  // sum_i w_i dy_i x_i
  for (int64_t i = threadIdx.x; i < D; i += kThreads) acc += w[i] * cuda_nn::load_f32(dh + i) * cuda_nn::load_f32(xh + i);
  const float sr = rstd[r * heads + h];
  const float k = nm::rmsnorm_dx_coeff_f32(cuda_nn::block_sum(acc, shared), sr, float(D));
  for (int64_t i = threadIdx.x; i < D; i += kThreads) {
    cuda_nn::store_f32(dh + i, nm::rmsnorm_dx_f32(w[i], cuda_nn::load_f32(dh + i), cuda_nn::load_f32(xh + i), sr, k));
  }
}

// The weight gradient's term for head row j = r * n_heads + (h - first): heads first ..
// first + n_heads - 1 of each row (the q heads, or the k heads), in row-then-head order.
template <class T>
struct HeadDwTerm {
  const T* d;
  const T* x;
  const float* rstd;
  int64_t stride, head_dim, first, n_heads, normed_heads;
  __device__ float operator()(int64_t j, int64_t i) const {
    const int64_t r = j / n_heads, h = first + j % n_heads;
    const int64_t at = r * stride + h * head_dim + i;
    return nm::rmsnorm_dw_term_f32(cuda_nn::load_f32(d + at), cuda_nn::load_f32(x + at), rstd[r * normed_heads + h]);
  }
};

template <class T>
void forward_launch(const HeadNormShape& s, T* out, float* rstd, const T* x, const float* wq, const float* wk,
                    float eps, cudaStream_t stream) {
  if (s.rows <= 0) return;
  const dim3 grid(unsigned(s.rows), unsigned(s.normed_heads() + 1));
  head_rmsnorm_forward_kernel<<<grid, kThreads, 0, stream>>>(s, out, rstd, x, wq, wk, eps);
  cuda_nn::check_launch();
}

template <class T>
void backward_launch(const HeadNormShape& s, T* d, float* dwq, float* dwk, const T* x, const float* wq,
                     const float* wk, const float* rstd, float* scratch, cudaStream_t stream) {
  if (s.rows <= 0) return;
  // The weight gradients read d before the dx kernel overwrites it (one stream: in order). The
  // two column sums run one after the other, so they may share the scratch.
  const int64_t heads = s.normed_heads();
  cuda_nn::column_sum_accumulate(dwq, scratch, s.rows * s.q_heads, s.head_dim,
                                 HeadDwTerm<T>{d, x, rstd, s.stride, s.head_dim, 0, s.q_heads, heads}, stream);
  cuda_nn::column_sum_accumulate(dwk, scratch, s.rows * s.k_heads, s.head_dim,
                                 HeadDwTerm<T>{d, x, rstd, s.stride, s.head_dim, s.q_heads, s.k_heads, heads}, stream);
  const dim3 grid(unsigned(s.rows), unsigned(heads));
  head_rmsnorm_backward_dx_kernel<<<grid, kThreads, 0, stream>>>(s, d, x, wq, wk, rstd);
  cuda_nn::check_launch();
}

}  // namespace

int64_t head_norm_backward_scratch_floats(const HeadNormShape& s) {
  return cuda_nn::column_sum_scratch_floats(s.rows * (s.q_heads > s.k_heads ? s.q_heads : s.k_heads), s.head_dim);
}

void head_rmsnorm_forward_cuda(const HeadNormShape& s, float* out, float* rstd, const float* x, const float* wq,
                               const float* wk, float eps, cudaStream_t stream) {
  forward_launch(s, out, rstd, x, wq, wk, eps, stream);
}
void head_rmsnorm_forward_cuda(const HeadNormShape& s, uint16_t* out, float* rstd, const uint16_t* x,
                               const float* wq, const float* wk, float eps, cudaStream_t stream) {
  forward_launch(s, out, rstd, x, wq, wk, eps, stream);
}
void head_rmsnorm_backward_cuda(const HeadNormShape& s, float* d, float* dwq, float* dwk, const float* x,
                                const float* wq, const float* wk, const float* rstd, float* scratch,
                                cudaStream_t stream) {
  backward_launch(s, d, dwq, dwk, x, wq, wk, rstd, scratch, stream);
}
void head_rmsnorm_backward_cuda(const HeadNormShape& s, uint16_t* d, float* dwq, float* dwk, const uint16_t* x,
                                const float* wq, const float* wk, const float* rstd, float* scratch,
                                cudaStream_t stream) {
  backward_launch(s, d, dwq, dwk, x, wq, wk, rstd, scratch, stream);
}

}  // namespace farthing::kernels

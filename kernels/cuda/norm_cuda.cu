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

// T: how dx, dout and x are stored (fp32, or bf16 under bf16 activations: dout and x widened,
// each dx value widened, added to and rounded once).
template <class T>
__global__ void __launch_bounds__(kThreads)
rmsnorm_backward_dx_kernel(T* dx, const T* dout, const T* x, const float* w, const float* rstd, int64_t c) {
  __shared__ float shared[kThreads];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * c;
  const T* g = dout + r * c;
  float acc = 0.0f;  // sum_i w_i dy_i x_i
  for (int64_t i = threadIdx.x; i < c; i += kThreads) acc += w[i] * cuda_nn::load_f32(g + i) * cuda_nn::load_f32(xr + i);
  const float s = rstd[r];
  const float k = nm::rmsnorm_dx_coeff_f32(cuda_nn::block_sum(acc, shared), s, float(c));
  T* d = dx + r * c;
  for (int64_t i = threadIdx.x; i < c; i += kThreads) {
    const float dxi = nm::rmsnorm_dx_f32(w[i], cuda_nn::load_f32(g + i), cuda_nn::load_f32(xr + i), s, k);
    cuda_nn::store_f32(d + i, cuda_nn::load_f32(d + i) + dxi);
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

// The per-(row, channel) terms of the weight gradients, for cuda_nn::column_sum_accumulate.
template <class T>
struct RmsnormDwTerm {
  const T *dout, *x;
  const float* rstd;
  int64_t c;
  __device__ float operator()(int64_t r, int64_t i) const {
    return nm::rmsnorm_dw_term_f32(cuda_nn::load_f32(dout + r * c + i), cuda_nn::load_f32(x + r * c + i), rstd[r]);
  }
};

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

template <class T>
void rmsnorm_backward_launch(T* dx, float* dw, const T* dout, const T* x, const float* w, const float* rstd,
                             int64_t n, int64_t c, float* scratch, cudaStream_t stream) {
  if (n <= 0) return;
  rmsnorm_backward_dx_kernel<<<unsigned(n), kThreads, 0, stream>>>(dx, dout, x, w, rstd, c);
  cuda_nn::check_launch();
  cuda_nn::column_sum_accumulate(dw, scratch, n, c, RmsnormDwTerm<T>{dout, x, rstd, c}, stream);
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

int64_t norm_backward_scratch_floats(int64_t n, int64_t c) { return cuda_nn::column_sum_scratch_floats(n, c); }

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

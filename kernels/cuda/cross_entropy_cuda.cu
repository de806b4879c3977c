// cross_entropy_cuda.cu — see cross_entropy_cuda.h.
#include "kernels/cuda/cross_entropy_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/exp_f32.h"

namespace farthing::kernels {

namespace {

constexpr int kRowThreads = 512;

// T: the logits' storage, fp32 or bf16 (widened on load, each gradient value rounded once on
// store). NOTE: e^(l - max) is computed twice, for the sum and again for the gradient, rather
// than kept in l: a bf16 l could not keep it, and exp_f32 gives the same bits both times.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
cross_entropy_row_kernel(T* logits, const int32_t* targets, int64_t vocab, float grad_scale, bool want_grad,
                         double* row_loss) {
  __shared__ float shared_f[kRowThreads];
  __shared__ double shared_d[kRowThreads];
  const int64_t r = blockIdx.x;
  T* l = logits + r * vocab;
  const int32_t target = targets[r];
  if (target < 0) {
    if (want_grad) {
      for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) cuda_nn::store_f32(l + i, 0.0f);
    }
    if (threadIdx.x == 0) row_loss[r] = 0.0;
    return;
  }
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) m = fmaxf(m, cuda_nn::load_f32(l + i));
  m = cuda_nn::block_max(m, shared_f);
  const float target_logit = cuda_nn::load_f32(l + target);
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) acc += double(numerics::exp_f32(cuda_nn::load_f32(l + i) - m));
  const double sum = cuda_nn::block_sum(acc, shared_d);  // also: every thread has read l[target]
  if (threadIdx.x == 0) row_loss[r] = (double(m) + log(sum)) - double(target_logit);
  if (!want_grad) return;
  const float k = float(double(grad_scale) / sum);
  // e * k, and at the target (e * k) - grad_scale: each thread rewrites only the elements it read.
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) {
    const float p = numerics::exp_f32(cuda_nn::load_f32(l + i) - m) * k;
    cuda_nn::store_f32(l + i, i == target ? p - grad_scale : p);
  }
}

// *loss_sum += row_loss[0] + row_loss[1] + ... in row order (one thread: rows per call are few),
// the call's sum added as a whole, as the CPU backend adds cross_entropy_rows_cpu's.
__global__ void sum_in_order_kernel(const double* row_loss, int64_t rows, double* loss_sum) {
  double acc = 0.0;
  for (int64_t r = 0; r < rows; ++r) acc += row_loss[r];
  *loss_sum += acc;
}

}  // namespace

namespace {

template <class T>
void cross_entropy_rows_any(T* logits, const int32_t* targets, int64_t rows, int64_t vocab, float grad_scale,
                            bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream) {
  if (rows > 0) {
    cross_entropy_row_kernel<<<unsigned(rows), kRowThreads, 0, stream>>>(logits, targets, vocab, grad_scale,
                                                                         want_grad, row_loss);
    cuda_nn::check_launch();
  }
  sum_in_order_kernel<<<1, 1, 0, stream>>>(row_loss, rows, loss_sum);
  cuda_nn::check_launch();
}

}  // namespace

void cross_entropy_rows_cuda(float* logits, const int32_t* targets, int64_t rows, int64_t vocab, float grad_scale,
                             bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream) {
  cross_entropy_rows_any(logits, targets, rows, vocab, grad_scale, want_grad, row_loss, loss_sum, stream);
}
void cross_entropy_rows_cuda(uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum,
                             cudaStream_t stream) {
  cross_entropy_rows_any(logits, targets, rows, vocab, grad_scale, want_grad, row_loss, loss_sum, stream);
}

}  // namespace farthing::kernels

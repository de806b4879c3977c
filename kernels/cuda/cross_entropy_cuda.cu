// cross_entropy_cuda.cu — see cross_entropy_cuda.h.
#include "kernels/cuda/cross_entropy_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/exp_f32.h"

namespace farthing::kernels {

namespace {

constexpr int kRowThreads = 512;

// G: where the gradient goes: float (over the logits, grad == logits) or bf16 (rounded once).
template <class G>
__global__ void __launch_bounds__(kRowThreads)
cross_entropy_row_kernel(float* logits, G* grad, const int32_t* targets, int64_t vocab, float grad_scale,
                         bool want_grad, double* row_loss) {
  __shared__ float shared_f[kRowThreads];
  __shared__ double shared_d[kRowThreads];
  const int64_t r = blockIdx.x;
  float* l = logits + r * vocab;
  G* g = grad + r * vocab;
  const int32_t target = targets[r];
  if (target < 0) {
    if (want_grad) {
      for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) cuda_nn::store_f32(g + i, 0.0f);
    }
    if (threadIdx.x == 0) row_loss[r] = 0.0;
    return;
  }
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) m = fmaxf(m, l[i]);
  m = cuda_nn::block_max(m, shared_f);
  const float target_logit = l[target];
  __syncthreads();  // every thread has read l[target] before it is overwritten below
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) {
    const float e = numerics::exp_f32(l[i] - m);
    acc += double(e);
    if (want_grad) l[i] = e;
  }
  const double sum = cuda_nn::block_sum(acc, shared_d);
  if (threadIdx.x == 0) row_loss[r] = (double(m) + log(sum)) - double(target_logit);
  if (!want_grad) return;
  const float k = float(double(grad_scale) / sum);
  // (e * k), and at the target (e * k) - grad_scale: the in-place form's two steps, each value
  // stored once (over l itself for an fp32 gradient, so no thread reads a stored one back).
  for (int64_t i = threadIdx.x; i < vocab; i += kRowThreads) {
    const float p = l[i] * k;
    cuda_nn::store_f32(g + i, i == target ? p - grad_scale : p);
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

void cross_entropy_rows_cuda(float* logits, uint16_t* grad_bf16, const int32_t* targets, int64_t rows, int64_t vocab,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream) {
  if (rows > 0) {
    if (grad_bf16 != nullptr) {
      cross_entropy_row_kernel<<<unsigned(rows), kRowThreads, 0, stream>>>(logits, grad_bf16, targets, vocab,
                                                                           grad_scale, want_grad, row_loss);
    } else {
      cross_entropy_row_kernel<<<unsigned(rows), kRowThreads, 0, stream>>>(logits, logits, targets, vocab, grad_scale,
                                                                           want_grad, row_loss);
    }
    cuda_nn::check_launch();
  }
  sum_in_order_kernel<<<1, 1, 0, stream>>>(row_loss, rows, loss_sum);
  cuda_nn::check_launch();
}

}  // namespace farthing::kernels

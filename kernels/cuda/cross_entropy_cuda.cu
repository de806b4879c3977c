// cross_entropy_cuda.cu — see cross_entropy_cuda.h.
#include "kernels/cuda/cross_entropy_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"
#include "kernels/numerics/exp_f32.h"

namespace farthing::kernels {

namespace {

using cuda_nn::kVec;

constexpr int kRowThreads = 512;
constexpr int kLossThreads = 256;

// T: the logits' storage, fp32 or bf16 (widened on load, each gradient value rounded once on
// store). Thread t owns the groups of eight elements t, t + kRowThreads, ... and adds its
// e^(l - max) in element order: one assignment for fp32 and bf16 rows, aligned or not, so a bf16
// row's loss is the fp32 form's on the widened logits, bit for bit.
// NOTE: three reads of the row (max, sum, gradient), not an online softmax's two: the contract
// is each e^(l - max) with the row's exact max (the CPU's bits per element, exp_f32), which a
// running max rescaled on the way would not give. e is recomputed for the gradient rather than
// kept in l: a bf16 l could not keep it, and exp_f32 gives the same bits both times.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
cross_entropy_row_kernel(T* logits, const int32_t* targets, int64_t vocab, int64_t stride, float grad_scale,
                         bool want_grad, double* row_loss) {
  __shared__ float shared_f[kRowThreads];
  __shared__ double shared_d[kRowThreads];
  const int64_t r = blockIdx.x;
  T* l = logits + r * stride;  // the row's vocab values; the pad columns up to stride are never touched
  const int64_t groups = (vocab + kVec - 1) / kVec;
  // The row's own start decides: its whole groups of eight are then 16-byte aligned, and the tail
  // group (vocab % 8 values) is read and written element by element.
  const bool aligned = cuda_nn::vec8_aligned(l);
  const int32_t target = targets[r];
  float v[kVec];
  if (target < 0) {
    if (want_grad) {
      for (int j = 0; j < kVec; ++j) v[j] = 0.0f;
      for (int64_t g = threadIdx.x; g < groups; g += kRowThreads) {
        const int64_t left = vocab - g * kVec;
        cuda_nn::store_group_f32(l, g, left < kVec ? int(left) : kVec, aligned, v);
      }
    }
    if (threadIdx.x == 0) row_loss[r] = 0.0;
    return;
  }
  float m = -INFINITY;
  for (int64_t g = threadIdx.x; g < groups; g += kRowThreads) {
    const int n = cuda_nn::load_group_f32(l, g, vocab, aligned, v);
    for (int j = 0; j < n; ++j) m = fmaxf(m, v[j]);
  }
  m = cuda_nn::block_max(m, shared_f);
  const float target_logit = cuda_nn::load_f32(l + target);
  double acc = 0.0;
  for (int64_t g = threadIdx.x; g < groups; g += kRowThreads) {
    const int n = cuda_nn::load_group_f32(l, g, vocab, aligned, v);
    for (int j = 0; j < n; ++j) acc += double(numerics::exp_f32(v[j] - m));
  }
  const double sum = cuda_nn::block_sum(acc, shared_d);  // also: every thread has read l[target]
  if (threadIdx.x == 0) row_loss[r] = (double(m) + log(sum)) - double(target_logit);
  if (!want_grad) return;
  const float k = float(double(grad_scale) / sum);
  // e * k, and at the target (e * k) - grad_scale: each thread rewrites only the elements it read.
  for (int64_t g = threadIdx.x; g < groups; g += kRowThreads) {
    const int n = cuda_nn::load_group_f32(l, g, vocab, aligned, v);
    for (int j = 0; j < n; ++j) {
      const float p = numerics::exp_f32(v[j] - m) * k;
      v[j] = g * kVec + j == target ? p - grad_scale : p;
    }
    cuda_nn::store_group_f32(l, g, n, aligned, v);
  }
}

// *loss_sum += the call's row losses, summed in one block in a fixed order: thread t adds rows
// t, t + kLossThreads, ... in order, then the block's halving tree adds the threads' sums. The
// call's sum is added as a whole, as the CPU backend adds cross_entropy_rows_cpu's (which sums
// in row order: the two may differ in the last bits of a double).
__global__ void __launch_bounds__(kLossThreads)
sum_row_losses_kernel(const double* row_loss, int64_t rows, double* loss_sum) {
  __shared__ double shared[kLossThreads];
  double acc = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kLossThreads) acc += row_loss[r];
  const double total = cuda_nn::block_sum(acc, shared);
  if (threadIdx.x == 0) *loss_sum += total;
}

template <class T>
void cross_entropy_rows_any(T* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                            float grad_scale, bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream) {
  if (rows <= 0) return;  // nothing to add to *loss_sum
  cross_entropy_row_kernel<<<unsigned(rows), kRowThreads, 0, stream>>>(logits, targets, vocab, stride, grad_scale,
                                                                       want_grad, row_loss);
  cuda_nn::check_launch();
  sum_row_losses_kernel<<<1, kLossThreads, 0, stream>>>(row_loss, rows, loss_sum);
  cuda_nn::check_launch();
}

}  // namespace

void cross_entropy_rows_cuda(float* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream) {
  cross_entropy_rows_any(logits, targets, rows, vocab, stride, grad_scale, want_grad, row_loss, loss_sum, stream);
}
void cross_entropy_rows_cuda(uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum,
                             cudaStream_t stream) {
  cross_entropy_rows_any(logits, targets, rows, vocab, stride, grad_scale, want_grad, row_loss, loss_sum, stream);
}

}  // namespace farthing::kernels

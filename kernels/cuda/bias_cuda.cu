// bias_cuda.cu — see bias_cuda.h.
#include "kernels/cuda/bias_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"

namespace farthing::kernels {

namespace {

using cuda_nn::kThreads;

__global__ void __launch_bounds__(kThreads)
bias_add_kernel(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) {
  const int64_t count = n * c;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / c, i = e - r * c;
    out[r * stride + i] += bias[i];
  }
}

__global__ void __launch_bounds__(kThreads) accumulate_kernel(float* dst, const float* src, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] += src[i];
  }
}

}  // namespace

void bias_add_cuda(float* out, const float* bias, int64_t n, int64_t c, int64_t stride, cudaStream_t stream) {
  if (n * c <= 0) return;
  bias_add_kernel<<<cuda_nn::blocks_for(n * c), kThreads, 0, stream>>>(out, bias, n, c, stride);
  cuda_nn::check_launch();
}

int64_t bias_backward_scratch_floats(int64_t n, int64_t c) { return cuda_nn::column_sum_scratch_floats(n, c); }

void bias_backward_cuda(float* dbias, const float* dout, int64_t n, int64_t c, int64_t stride, float* scratch,
                        cudaStream_t stream, int64_t max_grid_y) {
  cuda_nn::column_sum_accumulate(dbias, scratch, n, c, cuda_nn::StridedRowTerm<float>{dout, stride}, stream, max_grid_y);
}
void bias_backward_cuda(float* dbias, const uint16_t* dout, int64_t n, int64_t c, int64_t stride, float* scratch,
                        cudaStream_t stream, int64_t max_grid_y) {
  cuda_nn::column_sum_accumulate(dbias, scratch, n, c, cuda_nn::StridedRowTerm<uint16_t>{dout, stride}, stream, max_grid_y);
}

void accumulate_cuda(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  accumulate_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(dst, src, count);
  cuda_nn::check_launch();
}

}  // namespace farthing::kernels

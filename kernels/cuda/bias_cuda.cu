// bias_cuda.cu — see bias_cuda.h.
#include "kernels/cuda/bias_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"

namespace farthing::kernels {

namespace {

using cuda_nn::kThreads;
using cuda_nn::kVec;

// Rows on grid.y (looped past its limit), groups of eight columns of a row on grid.x, so no
// index is divided per element; 16-byte accesses where aligned (vec8.cuh). Each element is the
// one fp32 add, so the grouping changes no bits.
__global__ void __launch_bounds__(kThreads)
bias_add_kernel(float* out, const float* bias, int64_t n, int64_t c, int64_t stride, bool aligned) {
  const int64_t groups = (c + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    float* o = out + r * stride;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float v[kVec], b[kVec];
      const int k = cuda_nn::load_group_f32(o, g, c, aligned, v);
      cuda_nn::load_group_f32(bias, g, c, aligned, b);
      for (int j = 0; j < k; ++j) v[j] += b[j];
      cuda_nn::store_group_f32(o, g, k, aligned, v);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
accumulate_kernel(float* dst, const float* src, int64_t count, bool aligned) {
  const int64_t groups = (count + kVec - 1) / kVec;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
    float d[kVec], s[kVec];
    const int k = cuda_nn::load_group_f32(dst, g, count, aligned, d);
    cuda_nn::load_group_f32(src, g, count, aligned, s);
    for (int j = 0; j < k; ++j) d[j] += s[j];
    cuda_nn::store_group_f32(dst, g, k, aligned, d);
  }
}

}  // namespace

void bias_add_cuda(float* out, const float* bias, int64_t n, int64_t c, int64_t stride, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  // Every row starts 16-byte aligned when out does and the stride is a multiple of four floats.
  const bool aligned = stride % 4 == 0 && cuda_nn::vec8_aligned(out) && cuda_nn::vec8_aligned(bias);
  const dim3 grid(cuda_nn::blocks_for((c + kVec - 1) / kVec), unsigned(n < cuda_nn::kMaxGridY ? n : cuda_nn::kMaxGridY));
  bias_add_kernel<<<grid, kThreads, 0, stream>>>(out, bias, n, c, stride, aligned);
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
  const bool aligned = cuda_nn::vec8_aligned(dst) && cuda_nn::vec8_aligned(src);
  accumulate_kernel<<<cuda_nn::blocks_for((count + kVec - 1) / kVec), kThreads, 0, stream>>>(dst, src, count, aligned);
  cuda_nn::check_launch();
}

}  // namespace farthing::kernels

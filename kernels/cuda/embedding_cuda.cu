// embedding_cuda.cu — see embedding_cuda.h.
#include "kernels/cuda/embedding_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"

namespace farthing::kernels {

namespace {

using cuda_nn::kThreads;
constexpr int kColumnTile = 128;

// Out: fp32, or bf16 (the residual stream under bf16 activations: the fp32 sum rounded once).
// Rows on grid.y (looped past its limit), groups of eight channels on grid.x (no division per
// element), 16-byte accesses where aligned (vec8.cuh); each element is the table's value, plus
// the position's in one fp32 add.
template <class Out, class T>
__global__ void __launch_bounds__(kThreads)
embedding_forward_kernel(Out* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t n, RowPositions pos,
                         int64_t c, bool aligned) {
  constexpr int kVec = cuda_nn::kVec;
  const int64_t groups = (c + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    const T* te = wte + int64_t(tokens[r]) * c;
    const T* pe = wpe != nullptr ? wpe + pos.of(r) * c : nullptr;
    Out* o = out + r * c;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float v[kVec], p[kVec];
      const int k = cuda_nn::load_group_f32(te, g, c, aligned, v);
      if (pe != nullptr) {
        cuda_nn::load_group_f32(pe, g, c, aligned, p);
        for (int j = 0; j < k; ++j) v[j] = v[j] + p[j];
      }
      cuda_nn::store_group_f32(o, g, k, aligned, v);
    }
  }
}

// first[r] = 1 when no earlier row has row r's token; next[r] = the next row with the same
// token, or -1.
__global__ void __launch_bounds__(kThreads)
embedding_links_kernel(int32_t* first, int32_t* next, const int32_t* tokens, int64_t n) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n) return;
  const int32_t t = tokens[r];
  int32_t is_first = 1;
  for (int64_t q = 0; q < r; ++q) {
    if (tokens[q] == t) {
      is_first = 0;
      break;
    }
  }
  int32_t following = -1;
  for (int64_t q = r + 1; q < n; ++q) {
    if (tokens[q] == t) {
      following = int32_t(q);
      break;
    }
  }
  first[r] = is_first;
  next[r] = following;
}

// Block (r, tile): when row r is its token's first occurrence, dwte[token][col] += dout rows of
// that token, in row order (one thread per column, so no two threads touch one element).
template <class T>
__global__ void __launch_bounds__(kColumnTile)
embedding_backward_wte_kernel(float* dwte, const T* dout, const int32_t* tokens, const int32_t* first,
                              const int32_t* next, int64_t c) {
  const int64_t r = blockIdx.x, col = int64_t(blockIdx.y) * kColumnTile + threadIdx.x;
  if (first[r] == 0 || col >= c) return;
  float* dst = dwte + int64_t(tokens[r]) * c + col;
  float acc = *dst;
  for (int64_t q = r; q >= 0; q = next[q]) acc += cuda_nn::load_f32(dout + q * c + col);
  *dst = acc;
}

// dwpe[p][col] += dout of the rows at position p, in row order: rows p, p + seq, ... or, with
// document starts, every row whose position within its document is p.
template <class T>
__global__ void __launch_bounds__(kThreads)
embedding_backward_wpe_kernel(float* dwpe, const T* dout, int64_t n, RowPositions pos, int64_t c) {
  const int64_t positions = n < pos.seq ? n : pos.seq, count = positions * c;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = e / c, col = e - p * c;
    float acc = dwpe[e];
    if (pos.doc_start == nullptr) {
      for (int64_t r = p; r < n; r += pos.seq) acc += cuda_nn::load_f32(dout + r * c + col);
    } else {
      for (int64_t r = p; r < n; ++r) {
        if (pos.of(r) == p) acc += cuda_nn::load_f32(dout + r * c + col);
      }
    }
    dwpe[e] = acc;
  }
}

template <class Out, class T>
void embedding_forward_any(Out* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t n, RowPositions pos,
                           int64_t c, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  const bool aligned = c % cuda_nn::kVec == 0 && cuda_nn::vec8_aligned(out) && cuda_nn::vec8_aligned(wte) &&
                       (wpe == nullptr || cuda_nn::vec8_aligned(wpe));
  const dim3 grid(cuda_nn::blocks_for((c + cuda_nn::kVec - 1) / cuda_nn::kVec),
                  unsigned(n < cuda_nn::kMaxGridY ? n : cuda_nn::kMaxGridY));
  embedding_forward_kernel<<<grid, kThreads, 0, stream>>>(out, tokens, wte, wpe, n, pos, c, aligned);
  cuda_nn::check_launch();
}

}  // namespace

void embedding_forward_cuda(float* out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                            RowPositions pos, int64_t c, cudaStream_t stream) {
  embedding_forward_any(out, tokens, wte, wpe, n, pos, c, stream);
}

void embedding_forward_cuda(uint16_t* out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                            RowPositions pos, int64_t c, cudaStream_t stream) {
  embedding_forward_any(out, tokens, wte, wpe, n, pos, c, stream);
}
void embedding_forward_bf16_cuda(float* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                 int64_t n, RowPositions pos, int64_t c, cudaStream_t stream) {
  embedding_forward_any(out, tokens, wte, wpe, n, pos, c, stream);
}
void embedding_forward_bf16_cuda(uint16_t* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                 int64_t n, RowPositions pos, int64_t c, cudaStream_t stream) {
  embedding_forward_any(out, tokens, wte, wpe, n, pos, c, stream);
}

int64_t embedding_backward_scratch_floats(int64_t n) { return 2 * n; }  // first, next as int32

namespace {

template <class T>
void embedding_backward_any(float* dwte, float* dwpe, const T* dout, const int32_t* tokens, int64_t n, RowPositions pos,
                            int64_t c, float* scratch, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  int32_t* first = reinterpret_cast<int32_t*>(scratch);
  int32_t* next = first + n;
  embedding_links_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(first, next, tokens, n);
  cuda_nn::check_launch();
  const dim3 grid(unsigned(n), unsigned((c + kColumnTile - 1) / kColumnTile));
  embedding_backward_wte_kernel<<<grid, kColumnTile, 0, stream>>>(dwte, dout, tokens, first, next, c);
  cuda_nn::check_launch();
  if (dwpe != nullptr) {
    const int64_t count = (n < pos.seq ? n : pos.seq) * c;
    embedding_backward_wpe_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(dwpe, dout, n, pos, c);
    cuda_nn::check_launch();
  }
}

}  // namespace

void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int64_t n,
                             RowPositions pos, int64_t c, float* scratch, cudaStream_t stream) {
  embedding_backward_any(dwte, dwpe, dout, tokens, n, pos, c, scratch, stream);
}
void embedding_backward_cuda(float* dwte, float* dwpe, const uint16_t* dout, const int32_t* tokens, int64_t n,
                             RowPositions pos, int64_t c, float* scratch, cudaStream_t stream) {
  embedding_backward_any(dwte, dwpe, dout, tokens, n, pos, c, scratch, stream);
}

}  // namespace farthing::kernels

// attention_documents_cuda.cu — see attention_documents_cuda.h.
#include "kernels/cuda/attention_documents_cuda.h"

#include "kernels/cuda/cuda_check.h"

namespace farthing::kernels {

namespace {

constexpr int kThreads = 256;

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// One block: each thread counts the document starts in its stretch of rows, an exclusive scan of
// those counts numbers the documents, then each thread writes the entries of its own starts.
__global__ void __launch_bounds__(kThreads)
ragged_documents_kernel(const int32_t* doc_start, int64_t rows, int64_t seq, int64_t bound, int64_t qkv_stride,
                        int64_t out_stride, int64_t heads, RaggedDocuments out) {
  __shared__ int64_t first_document[kThreads + 1];
  const int64_t stretch = (rows + kThreads - 1) / kThreads;
  const int64_t begin = threadIdx.x * stretch, end = begin + stretch < rows ? begin + stretch : rows;
  auto starts_document = [&](int64_t r) { return int64_t(doc_start[r]) == r % seq; };
  int64_t mine = 0;
  for (int64_t r = begin; r < end; ++r) mine += starts_document(r);
  first_document[threadIdx.x + 1] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    first_document[0] = 0;
    for (int i = 1; i <= kThreads; ++i) first_document[i] += first_document[i - 1];
  }
  __syncthreads();
  int64_t d = first_document[threadIdx.x];
  for (int64_t r = begin; r < end; ++r) {
    if (!starts_document(r)) continue;
    int64_t last = r + 1;  // the document runs to the next start or its sequence's end
    while (last < rows && last % seq != 0 && !starts_document(last)) ++last;
    if (d < bound) {
      out.lengths[d] = int32_t(last - r);
      out.qkv_offset[d] = int32_t(r * qkv_stride);
      out.out_offset[d] = int32_t(r * out_stride);
      out.stats_offset[d] = int32_t(r / seq * heads * seq + r % seq);
    }
    ++d;
  }
  // The empty entries past the documents, and the closing one.
  const int64_t found = first_document[kThreads] < bound ? first_document[kThreads] : bound;
  for (int64_t e = found + threadIdx.x; e <= bound; e += kThreads) {
    if (e < bound) out.lengths[e] = 0;
    out.qkv_offset[e] = int32_t(rows * qkv_stride);
    out.out_offset[e] = int32_t(rows * out_stride);
    out.stats_offset[e] = int32_t(rows / seq * heads * seq);
  }
}

}  // namespace

size_t ragged_documents_bytes(int64_t bound) {
  return aligned(size_t(bound) * 4) + 3 * aligned(size_t(bound + 1) * 4);
}

RaggedDocuments ragged_documents_in(void* memory, int64_t bound) {
  auto* p = static_cast<char*>(memory);
  RaggedDocuments r;
  r.lengths = reinterpret_cast<int32_t*>(p);
  p += aligned(size_t(bound) * 4);
  int32_t** offsets[] = {&r.qkv_offset, &r.out_offset, &r.stats_offset};
  for (int32_t** o : offsets) {
    *o = reinterpret_cast<int32_t*>(p);
    p += aligned(size_t(bound + 1) * 4);
  }
  return r;
}

void ragged_documents_cuda(const AttentionShape& s, int64_t bound, const RaggedDocuments& out, cudaStream_t stream) {
  ragged_documents_kernel<<<1, kThreads, 0, stream>>>(s.doc_start, s.batch * s.seq, s.seq, bound, s.qkv_stride(),
                                                       s.q_heads * s.head_dim, s.q_heads, out);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

}  // namespace farthing::kernels

// attention_documents_cuda.h — the documents packed into a micro-batch's sequences as cuDNN's
// ragged batch (attention_cudnn.h): each document is one "sequence" of the batch, found on the
// device from AttentionShape::doc_start, so the host never reads the starts back.
//
// For document d, in order through the B*T rows (row r starts one where doc_start[r] == r % T):
//   lengths[d]       its rows (seq_len_q = seq_len_kv: a document attends within itself)
//   qkv_offset[d]    element offset of its first row in qkv (and dqkv): r * qkv_stride
//   out_offset[d]    the same in out and dout: r * Hq * D
//   stats_offset[d]  the same in lse (B, Hq, T): b * Hq * T + t, for row r = b * T + t
// Entries d >= the documents found, up to `bound`, are empty (length 0, offsets at the end), as
// is the closing entry offsets[bound]: the graph's batch is a bound, the data fills part of it.
// Integers only: one block, a fixed order, the same arrays every time.
// Relies on: op_shapes.h. Used by: attention_cudnn.cpp. Tested by: tests/kernels/test_nn_ops_parity.cpp
// (the bf16 documents rows, on a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

struct RaggedDocuments {
  int32_t* lengths = nullptr;       // bound
  int32_t* qkv_offset = nullptr;    // bound + 1
  int32_t* out_offset = nullptr;    // bound + 1
  int32_t* stats_offset = nullptr;  // bound + 1
};

// Device bytes of the four arrays for `bound` documents, each at a 256-byte boundary.
size_t ragged_documents_bytes(int64_t bound);
// The arrays carved from `memory` (ragged_documents_bytes(bound) bytes).
RaggedDocuments ragged_documents_in(void* memory, int64_t bound);
// Fills them from s.doc_start (device), queued on `stream`. s.documents <= bound.
void ragged_documents_cuda(const AttentionShape& s, int64_t bound, const RaggedDocuments& out, cudaStream_t stream);

}  // namespace farthing::kernels

// attention_cudnn.h — causal GQA attention through cuDNN's fused flash attention (the
// cudnn-frontend graph API): bf16 Q/K/V/O, fp32 softmax statistics, fp32 maths inside.
//
// The layout of attention_cuda.h, in bf16: qkv rows [q: Hq*D | k: Hkv*D | v: Hkv*D] of stride
// (Hq + 2 Hkv) D, read in place through strides (no permute); out (B*T, Hq*D); lse (B, Hq, T),
// the natural log-sum-exp of each query row's scaled scores (cuDNN's "stats"), as the CPU's; the
// backward writes dqkv in the qkv layout. The backward asks cuDNN for its deterministic
// algorithm, so a step repeats bit for bit (exact resume on the GPU), unless
// set_deterministic_backward(false) (train.deterministic_attention) lets cuDNN choose.
//
// libcudnn is loaded at run time (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING): no binary links it,
// the GPU package carries none, and a machine without it runs the fp32 fallback kernel
// (attention_cuda.h), which CudaNnOps announces. One graph per shape and direction is built on
// first use and cached with its workspace size.
// Documents packed into the sequences (AttentionShape::doc_start and documents): each document is
// one sequence of cuDNN's ragged batch (seq_len_q/kv under the padding mask, per-document
// offsets into qkv, out and lse, built on the device by attention_documents_cuda.h), read and
// written in place; the graph's batch and length are the next powers of two above the documents'
// count and the longest's rows (AttentionShape::documents, longest_document), so a few graphs
// serve every micro-batch; causal and sliding-window masks count from each document's first row.
// Its arrays take the front of the workspace (workspace_bytes includes them).
// Tolerance: bf16 inputs and outputs, so against the fp32 CPU reference this is within the
// "bf16 attention" class of tests/kernels/test_nn_ops_parity.cpp, never bitwise.
// Built only with cuDNN's headers (FARTHING_HAVE_CUDNN; cmake/FarthingDependencies.cmake finds the
// PyPI wheels nvidia-cudnn-cu13 and nvidia-cudnn-frontend). Cannot run under a GPU simulator
// (cuDNN ships machine code only); tools/gpu/check.sh runs it on a GPU.
// Relies on: cudnn_frontend.h, attention_documents_cuda.h. Used by: framework/backend/cuda_nn_ops.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

class CudnnAttention {
 public:
  // Loads libcudnn.so.9 (once per process) and makes a handle on the current device; nullptr,
  // with the reason in *why_not, when either fails.
  static std::unique_ptr<CudnnAttention> open(std::string* why_not);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // The backward's algorithm: deterministic (the default; a step repeats bit for bit) or cuDNN's
  // choice, which may sum dq with atomics (faster, not repeatable). Backward plans built before a
  // change are dropped.
  void set_deterministic_backward(bool deterministic);

  // The loaded library's version, e.g. "9.10.2".
  std::string version() const;

  // Whether cuDNN has a plan for this shape and direction (built and cached on the first ask);
  // the reason in *why_not when not. Workspace: device bytes the call below needs.
  bool supports(const AttentionShape& s, bool backward, std::string* why_not);
  size_t workspace_bytes(const AttentionShape& s, bool backward);

  // After supports(s, false): out (B*T, Hq*D) bf16 and lse (B, Hq, T) fp32 from qkv (bf16).
  void forward(const AttentionShape& s, uint16_t* out, float* lse, const uint16_t* qkv, void* workspace,
               cudaStream_t stream);
  // After supports(s, true): dqkv (B*T, stride) bf16, overwritten, from the forward's out and lse.
  void backward(const AttentionShape& s, uint16_t* dqkv, const uint16_t* dout, const uint16_t* out, const float* lse,
                const uint16_t* qkv, void* workspace, cudaStream_t stream);

 private:
  struct Impl;
  explicit CudnnAttention(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace farthing::kernels

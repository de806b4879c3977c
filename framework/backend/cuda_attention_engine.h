// cuda_attention_engine.h — which attention a CUDA attention call runs.
//
// cuDNN's fused flash attention (kernels/cuda/attention_cudnn.h: bf16, tensor cores) when the
// call allows bf16 (AttentionShape::dtype, the model's bf16 compute), the build has cuDNN's
// headers, libcudnn loads at run time and cuDNN has a plan for the shape and direction. Otherwise
// the hand-written fp32 kernel (attention_cuda.h), the slow path: a bf16 call that lands there says
// so once on stderr, with the reason (no cuDNN, or none for this shape), and counts it.
// FARTHING_CUDA_ATTENTION=kernel forces the fp32 kernel (to compare the two on one GPU). Calls
// with document starts (AttentionShape::doc_start) go to cuDNN as its ragged batch of documents
// (attention_cudnn.h) and, where cuDNN has no plan for that, to the fp32 kernel, which keeps
// them apart too; the message names the shape and the documents.
// CUDA builds only (a .cu beside the other CUDA sources). Relies on: kernels/cuda/attention_cudnn.h
// (when FARTHING_HAVE_CUDNN). Used by: cuda_nn_ops.cu.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "kernels/numerics/op_shapes.h"

namespace farthing {

namespace kernels {
class CudnnAttention;
}

class CudaAttentionEngine {
 public:
  CudaAttentionEngine();
  ~CudaAttentionEngine();
  CudaAttentionEngine(const CudaAttentionEngine&) = delete;
  CudaAttentionEngine& operator=(const CudaAttentionEngine&) = delete;

  // cuDNN for this call, or nullptr: run the fp32 kernel. Loads cuDNN on the first bf16 call.
  kernels::CudnnAttention* cudnn_for(const kernels::AttentionShape& s, bool backward);
  // cuDNN's backward: deterministic (the default) or its faster nondeterministic algorithm.
  void set_deterministic_backward(bool deterministic);
  // bf16 calls that ran the fp32 kernel so far (0 when every one ran on cuDNN).
  int64_t kernel_fallbacks() const { return fallbacks_; }

 private:
  void note_fallback(const std::string& why);

  bool forced_kernel_;
  bool deterministic_backward_ = true;
#ifdef FARTHING_HAVE_CUDNN  // defined for every user of this header in a cuDNN build (kernels/cuda/CMakeLists.txt)
  bool opened_ = false;
  std::unique_ptr<kernels::CudnnAttention> cudnn_;
  std::string open_error_;
#endif
  std::set<std::string> announced_;
  int64_t fallbacks_ = 0;
};

}  // namespace farthing

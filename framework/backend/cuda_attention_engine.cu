// cuda_attention_engine.cu — see cuda_attention_engine.h (host code; a .cu so that only CUDA builds compile it).
#include "framework/backend/cuda_attention_engine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef FARTHING_HAVE_CUDNN
#include "kernels/cuda/attention_cudnn.h"
#endif

namespace farthing {

namespace {

bool kernel_forced_by_environment() {
  const char* choice = std::getenv("FARTHING_CUDA_ATTENTION");
  return choice != nullptr && std::strcmp(choice, "kernel") == 0;
}

#ifdef FARTHING_HAVE_CUDNN
std::string shape_text(const kernels::AttentionShape& s, bool backward) {
  return std::string(backward ? "backward" : "forward") + " B " + std::to_string(s.batch) + " T " +
         std::to_string(s.seq) + " Hq " + std::to_string(s.q_heads) + " Hkv " + std::to_string(s.kv_heads) + " D " +
         std::to_string(s.head_dim) + (s.window > 0 ? " window " + std::to_string(s.window) : "") +
         (s.doc_start != nullptr ? " with packed documents" : "");  // not their count: said once
}
#endif

}  // namespace

CudaAttentionEngine::CudaAttentionEngine() : forced_kernel_(kernel_forced_by_environment()) {}

CudaAttentionEngine::~CudaAttentionEngine() = default;

void CudaAttentionEngine::note_fallback(const std::string& why) {
  ++fallbacks_;
  if (!announced_.insert(why).second) return;
  std::fprintf(stderr,
               "farthing: bf16 attention runs the fp32 CUDA kernel, the slow path (about 1%% of the GPU's bf16 "
               "peak): %s\n",
               why.c_str());
}

void CudaAttentionEngine::set_deterministic_backward(bool deterministic) {
  deterministic_backward_ = deterministic;
#ifdef FARTHING_HAVE_CUDNN
  if (cudnn_ != nullptr) cudnn_->set_deterministic_backward(deterministic);
#endif
}

kernels::CudnnAttention* CudaAttentionEngine::cudnn_for(const kernels::AttentionShape& s, bool backward) {
  if (s.dtype != kernels::GemmDtype::kBF16) return nullptr;  // fp32 asked for: the kernel is the right path
  if (forced_kernel_) {
    note_fallback("FARTHING_CUDA_ATTENTION=kernel");
    return nullptr;
  }
#ifdef FARTHING_HAVE_CUDNN
  if (!opened_) {
    opened_ = true;
    cudnn_ = kernels::CudnnAttention::open(&open_error_);
    if (cudnn_ != nullptr) std::fprintf(stderr, "farthing: attention through cuDNN %s\n", cudnn_->version().c_str());
    if (cudnn_ != nullptr) cudnn_->set_deterministic_backward(deterministic_backward_);
  }
  if (cudnn_ == nullptr) {
    note_fallback("cuDNN unavailable: " + open_error_);
    return nullptr;
  }
  std::string why_not;
  if (!cudnn_->supports(s, backward, &why_not)) {
    note_fallback("cuDNN has no plan for " + shape_text(s, backward) + ": " + why_not);
    return nullptr;
  }
  return cudnn_.get();
#else
  static_cast<void>(backward);
  note_fallback("this build has no cuDNN (configure with cuDNN's headers: pip install nvidia-cudnn-frontend "
                "nvidia-cudnn-cu13)");
  return nullptr;
#endif
}

}  // namespace farthing

// gemm_cublaslt.h — one BF16 GEMM shape planned once on cuBLASLt and run many times.
//
// C (m, n) = A (m, k) · B (n, k)ᵀ, every matrix row-major and contiguous: a Linear layer's
// forward, activations times the weight as stored (out_features, in_features). bf16 inputs and
// output, fp32 accumulation and scaling. In cuBLASLt's column-major terms this is the "TN" case
// (Cᵀ = B · Aᵀ), the layout its Hopper kernels are tuned for.
// NOTE: cuBLASLt picks the algorithm by heuristic and may split k, so results are bf16 roundings
// of an fp32 sum in an order of its choosing: never bitwise the CPU's. This is the ceiling the
// GPU benchmarks compare against (farthing bench gemm), not a parity op.
// Relies on: cuBLASLt and the CUDA runtime (both from the toolkit; the GPU machine has them).
// Tested by: farthing bench gemm, which checks sampled outputs of every shape against a double
// dot product of the same bf16 inputs on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace farthing::kernels {

class GemmBf16Lt {
 public:
  // Plans the shape on the current device (a cuBLASLt heuristic query) with up to
  // workspace_bytes of scratch; throws farthing::Error when cuBLASLt has no algorithm for it.
  GemmBf16Lt(int64_t m, int64_t n, int64_t k, cudaStream_t stream, size_t workspace_bytes = size_t(32) << 20);
  ~GemmBf16Lt();
  GemmBf16Lt(const GemmBf16Lt&) = delete;
  GemmBf16Lt& operator=(const GemmBf16Lt&) = delete;

  // Queues c <- a · bᵀ on the stream (device pointers to bf16 bits); does not wait.
  void run(const void* a, const void* b, void* c);
  // cuBLASLt's version number (e.g. 130000 for 13.0.0), for reports.
  static size_t library_version();

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

}  // namespace farthing::kernels

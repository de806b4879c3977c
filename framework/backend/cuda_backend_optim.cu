// cuda_backend_optim.cu — the CUDA backend's optimizer ops (Backend::fill_bytes, adamw_step,
// grad_partials) over kernels/cuda/optim_cuda.h, and its datasheet peak; the rest of the backend
// is cuda_backend.cu.
// Tested by: tests/kernels/test_cuda_optim_parity.cpp (the kernel, bitwise against the CPU);
// the trainer's GPU runs on an H200 (docs/results.md) went through these wrappers.
#include <cuda_runtime_api.h>

#include <string>

#include "framework/backend/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/optim_cuda.h"
#include "kernels/numerics/block_quant4.h"

namespace farthing {

namespace {
cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }
}  // namespace

void CudaBackend::fill_bytes(void* dst, uint8_t value, size_t bytes) {
  if (bytes == 0) return;
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  FARTHING_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, as_stream(stream_)));
}

void CudaBackend::adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) {
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  const bool four_bit =
      segment.m.format == kernels::MomentFormat::kBlock4 || segment.v.format == kernels::MomentFormat::kBlock4;
  if (four_bit && maps4_device_ == nullptr) {
    const numerics::DynamicMap4 signed4 = numerics::make_dynamic_map_4bit(numerics::MapSign::kSigned);
    const numerics::DynamicMap4 unsigned4 = numerics::make_dynamic_map_4bit(numerics::MapSign::kUnsigned);
    void* maps = nullptr;
    FARTHING_CUDA_CHECK(cudaMalloc(&maps, 2 * signed4.size() * sizeof(float)));
    maps4_device_ = static_cast<float*>(maps);
    FARTHING_CUDA_CHECK(cudaMemcpy(maps4_device_, signed4.data(), signed4.size() * sizeof(float),
                                   cudaMemcpyHostToDevice));
    FARTHING_CUDA_CHECK(cudaMemcpy(maps4_device_ + signed4.size(), unsigned4.data(),
                                   unsigned4.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  kernels::AdamWSegmentCuda args;
  static_cast<kernels::AdamWSegment&>(args) = segment;
  args.signed_map = map_for(numerics::MapSign::kSigned);
  args.unsigned_map = map_for(numerics::MapSign::kUnsigned);
  args.signed_map4 = maps4_device_;
  args.unsigned_map4 = maps4_device_ != nullptr ? maps4_device_ + 16 : nullptr;
  kernels::adamw_step_cuda(args, sums, optim_scratch(), as_stream(stream_));
}

void CudaBackend::grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) {
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  kernels::grad_partials_cuda(grad, format, n, sums, optim_scratch(), as_stream(stream_));
}

// Allocated on first use and kept: the kernels' block partials, reused by every call on the stream.
void* CudaBackend::optim_scratch() {
  if (optim_scratch_ == nullptr) FARTHING_CUDA_CHECK(cudaMalloc(&optim_scratch_, kernels::optim_scratch_bytes()));
  return optim_scratch_;
}

double CudaBackend::dense_bf16_peak_flops() const {
  cudaDeviceProp props{};
  if (cudaGetDeviceProperties(&props, device_index_) != cudaSuccess) return 0.0;
  const std::string name = props.name;
  // Dense BF16 (fp32 accumulate), TFLOP/s, no sparsity; the first match wins (specific names first).
  struct Peak { const char* name; double tflops; };
  static const Peak peaks[] = {{"H200 NVL", 835.0}, {"H200", 989.4}, {"H100 PCIe", 756.0}, {"H100 NVL", 835.0},
                               {"H100", 989.4}, {"A100", 312.0}, {"L40S", 362.1}, {"B200", 2250.0}};
  for (const Peak& p : peaks) {
    if (name.find(p.name) != std::string::npos) return p.tflops * 1e12;
  }
  return 0.0;
}

std::string CudaBackend::device_model() const {
  cudaDeviceProp props{};
  return cudaGetDeviceProperties(&props, device_index_) == cudaSuccess ? std::string(props.name) : std::string();
}

int CudaBackend::cuda_compute_capability() const {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index_) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_index_) != cudaSuccess) {
    return 0;
  }
  return major * 10 + minor;
}

}  // namespace farthing

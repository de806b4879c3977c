// cuda_backend.h — the CUDA backend: device memory, one stream, kernels/cuda launches.
//
// Plugs in behind backend.h next to the CPU reference and must agree with it bitwise on every
// elementwise op. Includable from plain C++ (backend.cpp is compiled by the host compiler):
// no CUDA type appears here, the stream is held as an opaque pointer.
// Relies on: kernels/cuda (compiled by nvcc), the CUDA runtime, cuda_nn_ops.h.
// Tested by: tests/kernels/test_cuda_parity.cpp (skips without a GPU).
#pragma once

#include <memory>

#include "framework/backend/backend.h"

namespace farthing {

class CudaNnOps;

class CudaBackend final : public Backend {
 public:
  // Selects the device, creates the backend's stream and uploads both dynamic maps.
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return Device::cuda(device_index_); }
  // The stream every op of this backend is queued on (a cudaStream_t), for communicators that
  // must order their work after it.
  void* stream() const { return stream_; }
  // From the device's stream-ordered pool, on this backend's stream (cudaMallocAsync): memory
  // freed by one unit is reused by the next without a device synchronisation.
  void* allocate_bytes(size_t bytes) override;
  // Stream-ordered (cudaFreeAsync). Never throws: it runs from Buffer destructors, also while an
  // earlier error unwinds.
  void free_bytes(void* data) override;
  // Host <-> device and device <-> device. A copy into host memory has finished when copy()
  // returns (the host waits); a copy from host memory has read it (pageable memory is staged by
  // the runtime, pinned memory is waited for), so the host may reuse it at once.
  void copy(const Tensor& dst, const Tensor& src) override;
  void cast(const Tensor& dst, const Tensor& src, const CastOptions& options) override;
  void block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                      numerics::MapSign sign) override;
  void block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                        numerics::MapSign sign) override;
  void fill_bytes(void* dst, uint8_t value, size_t bytes) override;
  // These two queue their work and add to sums in device memory; neither waits.
  void adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) override;
  void grad_partials(const void* grad, kernels::GradFormat format, size_t n, kernels::GradPartials* sums) override;
  // The model ops on this device (cuda_nn_ops.h), queued on this backend's stream; made on first use.
  NnOps& nn() override;
  void synchronize() override;
  // From the device's name (cudaGetDeviceProperties) and a table of NVIDIA's datasheet figures.
  double dense_bf16_peak_flops() const override;
  int cuda_compute_capability() const override;
  std::string device_model() const override;
  // CUDA events on this backend's stream (cuda_op_clock.cu).
  std::unique_ptr<OpClock> make_op_clock() override;

 private:
  void check_on_this_device(const Tensor& tensor, const char* op) const;
  const float* map_for(numerics::MapSign sign) const;
  void* optim_scratch();
  void release() noexcept;

  int device_index_;
  void* stream_ = nullptr;        // cudaStream_t, opaque to plain C++
  float* maps_device_ = nullptr;  // signed map then unsigned map, 2 x 256 floats
  std::unique_ptr<CudaNnOps> nn_;  // released before the stream it queues on
  float* maps4_device_ = nullptr;  // the 4-bit maps, 2 x 16 floats, uploaded on the first 4-bit step
  void* optim_scratch_ = nullptr;  // kernels::optim_scratch_bytes(), made on the first optimizer op
};

// A CUDA backend for device `device_index`; throws naming the visible device count when the
// index is out of range or the runtime fails.
std::unique_ptr<Backend> make_cuda_backend(int device_index);

// The number of visible CUDA devices; 0 when there is no driver or no GPU. Never throws.
int cuda_device_count();

// Free and total memory of device `device_index` (cudaMemGetInfo); throws naming the device
// when it is not visible or the runtime fails.
DeviceMemory cuda_device_memory(int device_index);

}  // namespace farthing

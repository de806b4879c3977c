// cuda_backend.cu — see cuda_backend.h.
#include "framework/backend/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "framework/backend/cuda_nn_ops.h"
#include "kernels/cuda/block_quant_cuda.h"
#include "kernels/cuda/cast_cuda.h"
#include "kernels/cuda/cuda_check.h"

namespace farthing {

namespace {

constexpr size_t kMapEntries = std::tuple_size_v<numerics::DynamicMap>;

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Page-locked host memory (cudaHostAlloc): a copy from it is a DMA that reads it after the call returns.
bool is_pinned(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

DeviceMemory cuda_device_memory(int device_index) {
  const int count = cuda_device_count();
  FARTHING_CHECK(device_index >= 0 && device_index < count, "cuda:", device_index, " requested but ", count,
                 " CUDA device(s) are visible");
  int previous = 0;
  FARTHING_CUDA_CHECK(cudaGetDevice(&previous));
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index));
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  FARTHING_CUDA_CHECK(cudaSetDevice(previous));
  FARTHING_CUDA_CHECK(status);
  return DeviceMemory{int64_t(free_bytes), int64_t(total_bytes)};
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver, no device, or a driver older than the runtime: all mean "no CUDA here".
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  return std::make_unique<CudaBackend>(device_index);
}

CudaBackend::CudaBackend(int device_index) : device_index_(device_index) {
  const int count = cuda_device_count();
  FARTHING_CHECK(device_index >= 0 && device_index < count, "cuda:", device_index,
                 " requested but ", count, " CUDA device(s) are visible",
                 count == 0 ? " (no driver or no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES)"
                            : " (device indices start at 0)");
  try {
    FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
    cudaStream_t stream = nullptr;
    // A blocking stream: it stays ordered with work that other code issues on the legacy
    // default stream (plain cudaMemcpy, cudaMemset), at the price of some overlap.
    FARTHING_CUDA_CHECK(cudaStreamCreate(&stream));
    stream_ = stream;
    // Buffers come from the device's stream-ordered pool (cudaMallocAsync on this stream): the
    // units and accumulators that come and go every step reuse pooled memory instead of a
    // cudaMalloc/cudaFree (each a device synchronisation) apiece. Freed memory stays in the pool.
    cudaMemPool_t pool = nullptr;
    FARTHING_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_index_));
    uint64_t keep_everything = UINT64_MAX;
    FARTHING_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    void* maps = nullptr;
    FARTHING_CUDA_CHECK(cudaMalloc(&maps, 2 * kMapEntries * sizeof(float)));
    maps_device_ = static_cast<float*>(maps);
    const numerics::DynamicMap signed_map = numerics::make_dynamic_map(numerics::MapSign::kSigned);
    const numerics::DynamicMap unsigned_map = numerics::make_dynamic_map(numerics::MapSign::kUnsigned);
    // On this backend's stream, so every later kernel is ordered after the upload.
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(maps_device_, signed_map.data(), kMapEntries * sizeof(float),
                                        cudaMemcpyHostToDevice, as_stream(stream_)));
    FARTHING_CUDA_CHECK(cudaMemcpyAsync(maps_device_ + kMapEntries, unsigned_map.data(),
                                        kMapEntries * sizeof(float), cudaMemcpyHostToDevice,
                                        as_stream(stream_)));
    FARTHING_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
  } catch (...) {
    release();
    throw;
  }
}

CudaBackend::~CudaBackend() { release(); }

// Errors are ignored here: at process exit the runtime may already be unloading, and the
// memory and stream go away with the context in any case.
void CudaBackend::release() noexcept {
  static_cast<void>(cudaSetDevice(device_index_));
  nn_.reset();
  if (maps_device_ != nullptr) static_cast<void>(cudaFree(maps_device_));
  if (maps4_device_ != nullptr) static_cast<void>(cudaFree(maps4_device_));
  maps4_device_ = nullptr;
  if (optim_scratch_ != nullptr) static_cast<void>(cudaFree(optim_scratch_));
  optim_scratch_ = nullptr;
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(as_stream(stream_)));
  maps_device_ = nullptr;
  stream_ = nullptr;
  static_cast<void>(cudaGetLastError());
}

void* CudaBackend::allocate_bytes(size_t bytes) {
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  void* data = nullptr;
  const cudaError_t status = cudaMallocAsync(&data, bytes, as_stream(stream_));
  if (status == cudaErrorMemoryAllocation) {
    static_cast<void>(cudaGetLastError());
    size_t free_bytes = 0, total_bytes = 0;
    static_cast<void>(cudaMemGetInfo(&free_bytes, &total_bytes));
    FARTHING_FAIL("allocation of ", bytes, " bytes on ", device().name(), " failed: ", free_bytes,
                  " of ", total_bytes, " bytes free (out of device memory)");
  }
  FARTHING_CUDA_CHECK(status);
  return data;
}

void CudaBackend::free_bytes(void* data) {
  if (data == nullptr) return;
  static_cast<void>(cudaSetDevice(device_index_));
  // Stream-ordered: the memory returns to the pool once the work queued before it has finished.
  // A Buffer outliving the backend (at process exit) is freed directly.
  const cudaError_t status = stream_ != nullptr ? cudaFreeAsync(data, as_stream(stream_)) : cudaFree(data);
  if (status != cudaSuccess && status != cudaErrorCudartUnloading) {
    // Throwing from a destructor would end the process and hide the error being unwound
    // (a failed kernel makes every later cudaFree fail too), so say it once and go on.
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true)) {
      std::fprintf(stderr, "farthing: warning: freeing device memory on %s failed: %s (%s)\n",
                   device().name().c_str(), cudaGetErrorName(status), cudaGetErrorString(status));
    }
  }
  static_cast<void>(cudaGetLastError());
}

void CudaBackend::check_on_this_device(const Tensor& tensor, const char* op) const {
  FARTHING_CHECK(tensor.device() == device(), op, " on the ", device().name(),
                 " backend needs tensors on ", device().name(), "; got ", tensor.describe(),
                 " (copy it there first)");
}

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  FARTHING_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel(), "copy from ",
                 src.describe(), " to ", dst.describe(), ": dtype or size differ");
  FARTHING_CHECK(dst.is_contiguous() && src.is_contiguous(), "copy needs contiguous tensors");
  for (const Tensor* t : {&dst, &src}) {
    FARTHING_CHECK(t->device().is_cpu() || t->device() == device(), "the ", device().name(),
                   " backend copies between the host and ", device().name(), " only; got ",
                   src.describe(), " -> ", dst.describe(), " (stage through host memory)");
  }
  const size_t bytes = dst.nbytes();
  if (bytes == 0) return;
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    std::memcpy(dst.data(), src.data(), bytes);
    return;
  }
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  FARTHING_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDefault,
                                      as_stream(stream_)));
  // Into host memory: the host waits for it (a readback). From pageable host memory the runtime
  // has staged the source before cudaMemcpyAsync returns, so the host may reuse it without a
  // wait; from pinned memory the copy reads it later, so that one waits too.
  if (dst.device().is_cpu() || (src.device().is_cpu() && is_pinned(src.data()))) {
    FARTHING_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
  }
}

void CudaBackend::cast(const Tensor& dst, const Tensor& src, const CastOptions& options) {
  check_cast_args(dst, src);
  check_on_this_device(dst, "cast");
  check_on_this_device(src, "cast");
  const size_t n = size_t(src.numel());
  if (src.dtype() == dst.dtype()) return copy(dst, src);
  if (n == 0) return;
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  if (src.dtype() == DType::kF32) {
    const auto format = narrow_format_of(dst.dtype());
    if (options.rounding == numerics::Rounding::kStochastic) {
      kernels::cast_f32_to_narrow_sr_cuda(format, static_cast<const float*>(src.data()), dst.data(), n,
                                          options.random_key, options.global_offset,
                                          as_stream(stream_));
    } else {
      kernels::cast_f32_to_narrow_cuda(format, static_cast<const float*>(src.data()), dst.data(), n,
                                       options.overflow, as_stream(stream_));
    }
    return;
  }
  kernels::cast_narrow_to_f32_cuda(narrow_format_of(src.dtype()), src.data(),
                                   static_cast<float*>(dst.data()), n, as_stream(stream_));
}

const float* CudaBackend::map_for(numerics::MapSign sign) const {
  return sign == numerics::MapSign::kSigned ? maps_device_ : maps_device_ + kMapEntries;
}

void CudaBackend::block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                                 numerics::MapSign sign) {
  check_block_quant_args(codes, absmax, src);
  check_on_this_device(codes, "block_quantize");
  check_on_this_device(absmax, "block_quantize");
  check_on_this_device(src, "block_quantize");
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  kernels::block_quantize_cuda(map_for(sign), sign == numerics::MapSign::kSigned,
                               static_cast<const float*>(src.data()), static_cast<uint8_t*>(codes.data()),
                               static_cast<float*>(absmax.data()), size_t(src.numel()),
                               as_stream(stream_));
}

void CudaBackend::block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                                   numerics::MapSign sign) {
  check_block_quant_args(codes, absmax, dst);
  check_on_this_device(dst, "block_dequantize");
  check_on_this_device(codes, "block_dequantize");
  check_on_this_device(absmax, "block_dequantize");
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  kernels::block_dequantize_cuda(map_for(sign), static_cast<const uint8_t*>(codes.data()),
                                 static_cast<const float*>(absmax.data()),
                                 static_cast<float*>(dst.data()), size_t(dst.numel()),
                                 as_stream(stream_));
}

NnOps& CudaBackend::nn() {
  if (!nn_) nn_ = std::make_unique<CudaNnOps>(device_index_, stream_);
  return *nn_;
}

void CudaBackend::synchronize() {
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  FARTHING_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

}  // namespace farthing

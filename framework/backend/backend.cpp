// backend.cpp — the registry of backends and the argument checks they share.
#include "framework/backend/backend.h"

#include <map>
#include <mutex>

#include "framework/backend/cpu_backend.h"
#include "framework/backend/profiling_backend.h"
#include "framework/backend/strict_device_backend.h"
#if defined(FARTHING_WITH_CUDA)
#include "framework/backend/cuda_backend.h"
#endif

namespace farthing {

Backend& backend_for(Device device) {
  // A step profile in progress wraps its device's backend (profiling_backend.h).
  if (Backend* profiling = installed_backend_override(device)) return *profiling;
  if (device.is_cpu()) {
    static CpuBackend cpu;
    return cpu;
  }
  if (device.kind == DeviceKind::kStrict) {
    static StrictDeviceBackend strict;
    return strict;
  }
#if defined(FARTHING_WITH_CUDA)
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Backend>> cuda_backends;
  std::lock_guard lock(mutex);
  auto& slot = cuda_backends[device.index];
  if (!slot) slot = make_cuda_backend(device.index);
  return *slot;
#else
  FARTHING_FAIL("device ", device.name(),
                " requested, but this farthing was built without CUDA (configure with "
                "-DFARTHING_CUDA=ON on a machine with the CUDA toolkit)");
#endif
}

std::unique_ptr<OpClock> Backend::make_op_clock() {
  // Off the host, the marks are read after a synchronize: free where the ops ran as they were
  // called (the strict device), and the one wait a device's event clock costs per step.
  if (device().is_cpu()) return std::make_unique<HostOpClock>();
  return std::make_unique<HostOpClock>([this] { synchronize(); });
}

void moment_to_f32_on_host(const kernels::MomentRef& moment, numerics::MapSign sign, float* dst, size_t n) {
  static_cast<CpuBackend&>(backend_for(Device::cpu())).moment_to_f32(moment, sign, dst, n);
}

int visible_cuda_devices() {
#if defined(FARTHING_WITH_CUDA)
  return cuda_device_count();
#else
  return 0;
#endif
}

DeviceMemory cuda_device_memory_of(int index) {
#if defined(FARTHING_WITH_CUDA)
  return cuda_device_memory(index);
#else
  FARTHING_FAIL("cuda:", index, " requested, but this farthing was built without CUDA");
#endif
}

bool cuda_available() {
#if defined(FARTHING_WITH_CUDA)
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

numerics::NarrowFormat narrow_format_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return numerics::NarrowFormat::kBf16;
    case DType::kF16: return numerics::NarrowFormat::kFp16;
    case DType::kE4M3: return numerics::NarrowFormat::kE4M3;
    case DType::kE5M2: return numerics::NarrowFormat::kE5M2;
    default: break;
  }
  FARTHING_FAIL("dtype ", dtype_name(dtype), " is not a narrow float format (bf16, f16, e4m3, e5m2)");
}

static bool is_float_dtype(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kE4M3 ||
         d == DType::kE5M2;
}

void check_cast_args(const Tensor& dst, const Tensor& src) {
  FARTHING_CHECK(dst.numel() == src.numel(), "cast from ", src.describe(), " to ", dst.describe(),
                 ": element counts differ");
  FARTHING_CHECK(dst.is_contiguous() && src.is_contiguous(), "cast needs contiguous tensors, got ",
                 src.describe(), " -> ", dst.describe());
  FARTHING_CHECK(is_float_dtype(dst.dtype()) && is_float_dtype(src.dtype()) &&
                     (dst.dtype() == DType::kF32 || src.dtype() == DType::kF32),
                 "cast supports f32 <-> {bf16, f16, e4m3, e5m2}; got ", dtype_name(src.dtype()),
                 " -> ", dtype_name(dst.dtype()));
}

void check_block_quant_args(const Tensor& codes, const Tensor& absmax, const Tensor& values) {
  const int64_t n = values.numel();
  const int64_t blocks = (n + numerics::kQuantBlockElems - 1) / numerics::kQuantBlockElems;
  FARTHING_CHECK(values.dtype() == DType::kF32 && codes.dtype() == DType::kU8 &&
                     absmax.dtype() == DType::kF32,
                 "block quantization takes f32 values, u8 codes and f32 absmax; got ",
                 values.describe(), ", ", codes.describe(), ", ", absmax.describe());
  FARTHING_CHECK(codes.numel() == n, "block quantization: ", n, " values but ", codes.numel(),
                 " codes");
  FARTHING_CHECK(absmax.numel() == blocks, "block quantization: ", n, " values need ", blocks,
                 " absmax entries (one per ", numerics::kQuantBlockElems, "), got ", absmax.numel());
  FARTHING_CHECK(values.is_contiguous() && codes.is_contiguous() && absmax.is_contiguous(),
                 "block quantization needs contiguous tensors");
}

}  // namespace farthing

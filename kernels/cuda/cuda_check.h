// cuda_check.h — FARTHING_CUDA_CHECK(expr): throw farthing::Error when a CUDA runtime call fails.
//
// The message keeps the failing expression, the CUDA error name and string, and
// file:line:function, in the same shape as FARTHING_CHECK. Use it on every runtime call and
// as FARTHING_CUDA_CHECK(cudaGetLastError()) after every kernel launch.
// Relies on: the CUDA runtime API and kernels/numerics/error.h (Error and concat, header-only, so
// kernels/cuda needs no framework library and includes no layer above it).
// Tested by: tests/kernels/test_cuda_parity.cpp (the error-path cases).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/numerics/error.h"

namespace farthing::cuda_detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t error, const char* expression, const char* file,
                                          int line, const char* function) {
  // Reset the thread's last-error slot, so a later FARTHING_CUDA_CHECK(cudaGetLastError())
  // reports its own failure rather than this one again (sticky errors stay regardless).
  static_cast<void>(cudaGetLastError());
  throw Error(error_detail::concat("CUDA error ", cudaGetErrorName(error), ": ",
                                   cudaGetErrorString(error), "\n  at ", file, ":", line, " in ",
                                   function, "() [check failed: ", expression, "]"));
}

// The same for the CUDA libraries (cuBLASLt: cublaslt_check.h), which report a status code and
// its name instead of a cudaError_t.
[[noreturn]] inline void throw_cuda_library_error(const char* library, int status, const char* status_name,
                                                  const char* expression, const char* file, int line) {
  throw Error(error_detail::concat(library, " error ", status, " (", status_name, ")\n  at ", file, ":", line,
                                   " [check failed: ", expression, "]"));
}

}  // namespace farthing::cuda_detail

#define FARTHING_CUDA_CHECK(expr)                                                              \
  do {                                                                                         \
    const cudaError_t farthing_cuda_status_ = (expr);                                          \
    if (farthing_cuda_status_ != cudaSuccess) [[unlikely]] {                                   \
      ::farthing::cuda_detail::throw_cuda_error(farthing_cuda_status_, #expr, __FILE__,        \
                                                __LINE__, __func__);                           \
    }                                                                                          \
  } while (0)

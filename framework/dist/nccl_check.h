// nccl_check.h — FARTHING_NCCL_CHECK(expr): throw farthing::Error when an NCCL call fails.
//
// Keeps the failing expression, NCCL's error string and its last-error detail, and
// file:line:function, in the same shape as FARTHING_CHECK. Includes nccl.h: only
// framework/dist/nccl*.cu may include this file (the CPU build never sees NCCL).
// Relies on: NCCL >= 2.13 (ncclGetLastError), framework/core/error.h.
// Tested by: compiled in CUDA builds; exercised by tests/dist/test_nccl.cpp on a GPU.
#pragma once

#include <nccl.h>

#include "framework/core/error.h"

namespace farthing::nccl_detail {

[[noreturn]] inline void throw_nccl_error(ncclResult_t result, ncclComm_t comm,
                                          const char* expression, const char* file, int line,
                                          const char* function) {
  const char* detail = ncclGetLastError(comm);
  throw Error(error_detail::concat("NCCL error ", int(result), ": ", ncclGetErrorString(result),
                                   (detail != nullptr && *detail != '\0') ? " (" : "",
                                   detail != nullptr ? detail : "",
                                   (detail != nullptr && *detail != '\0') ? ")" : "", "\n  at ",
                                   file, ":", line, " in ", function, "() [check failed: ",
                                   expression, "]"));
}

}  // namespace farthing::nccl_detail

#define FARTHING_NCCL_CHECK(expr)                                                              \
  do {                                                                                         \
    const ncclResult_t farthing_nccl_status_ = (expr);                                         \
    if (farthing_nccl_status_ != ncclSuccess) [[unlikely]] {                                   \
      ::farthing::nccl_detail::throw_nccl_error(farthing_nccl_status_, nullptr, #expr,         \
                                                __FILE__, __LINE__, __func__);                 \
    }                                                                                          \
  } while (0)

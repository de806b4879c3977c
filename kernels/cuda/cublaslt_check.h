// cublaslt_check.h — FARTHING_CUBLASLT_CHECK(expr): throw farthing::Error when a cuBLASLt call
// fails, naming the status and the failing expression with file:line, as cuda_check.h does for
// the runtime (whose throwing helper it uses, so the layering stays cuda_check.h's alone).
// Relies on: cublasLt.h, cuda_check.h. Tested by: tests/kernels/test_cuda_parity.cpp (GEMMs through
// every cuBLASLt wrapper; skipped without a GPU).
#pragma once

#include <cublasLt.h>

#include "kernels/cuda/cuda_check.h"

#define FARTHING_CUBLASLT_CHECK(expr)                                                                   \
  do {                                                                                                  \
    const cublasStatus_t farthing_lt_status_ = (expr);                                                  \
    if (farthing_lt_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                                    \
      ::farthing::cuda_detail::throw_cuda_library_error("cuBLASLt", int(farthing_lt_status_),          \
                                                        cublasLtGetStatusName(farthing_lt_status_), #expr, \
                                                        __FILE__, __LINE__);                            \
    }                                                                                                   \
  } while (0)

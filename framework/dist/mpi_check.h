// mpi_check.h — FARTHING_MPI_CHECK(expr): throw farthing::Error when an MPI call fails.
//
// The message keeps the failing expression, MPI's error class and string, and
// file:line:function, in the same shape as FARTHING_CHECK. MPI only returns errors to the
// caller on communicators whose error handler is MPI_ERRORS_RETURN (MpiCommunicator sets it on
// its own communicators); on others MPI aborts the job itself.
// Relies on: mpi.h, framework/core/error.h.
// Tested by: tests/dist/test_collectives.cpp (an invalid call through the check).
#pragma once

#include <mpi.h>

#include "framework/core/error.h"

namespace farthing::dist_detail {
[[noreturn]] void throw_mpi_error(int code, const char* expression, const char* file, int line,
                                  const char* function);
}  // namespace farthing::dist_detail

#define FARTHING_MPI_CHECK(expr)                                                               \
  do {                                                                                         \
    const int farthing_mpi_status_ = (expr);                                                   \
    if (farthing_mpi_status_ != MPI_SUCCESS) [[unlikely]] {                                    \
      ::farthing::dist_detail::throw_mpi_error(farthing_mpi_status_, #expr, __FILE__, __LINE__, \
                                               __func__);                                     \
    }                                                                                          \
  } while (0)

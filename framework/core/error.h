// error.h — the FARTHING_CHECK family, which throws farthing::Error (kernels/numerics/error.h).
//
// Library code never exits: it throws Error carrying a message for the user, naming the values
// involved (what()), and apart from it the place for developers: file:line, the function and the
// failed condition (location()), which tools print only when asked (FARTHING_DEBUG=1).
// Only tools/ decides to exit.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <string>

#include "kernels/numerics/error.h"  // Error and concat: the lowest layer, so kernels throw it too

namespace farthing::error_detail {
[[noreturn]] void throw_error(const char* file, int line, const char* function,
                              const char* condition, const std::string& message);
}  // namespace farthing::error_detail

// FARTHING_CHECK(cond, "parts", value, "of the message") throws farthing::Error when cond is false.
#define FARTHING_CHECK(cond, ...)                                                              \
  do {                                                                                         \
    if (!(cond)) [[unlikely]] {                                                                \
      ::farthing::error_detail::throw_error(__FILE__, __LINE__, __func__, #cond,               \
                                            ::farthing::error_detail::concat(__VA_ARGS__));    \
    }                                                                                          \
  } while (0)

// FARTHING_FAIL("message", values...) throws unconditionally.
#define FARTHING_FAIL(...)                                                                     \
  ::farthing::error_detail::throw_error(__FILE__, __LINE__, __func__, nullptr,                 \
                                        ::farthing::error_detail::concat(__VA_ARGS__))

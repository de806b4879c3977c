// error.h — farthing::Error and the FARTHING_CHECK family.
//
// Library code never exits: it throws Error carrying a message for the user, naming the values
// involved (what()), and apart from it the place for developers: file:line, the function and the
// failed condition (location()), which tools print only when asked (FARTHING_DEBUG=1).
// Only tools/ decides to exit.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace farthing {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string location = "")
      : std::runtime_error(message), location_(std::move(location)) {}
  // "at file:line in function() [check failed: condition]", or "" when not known.
  const std::string& location() const { return location_; }

 private:
  std::string location_;
};

namespace error_detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
[[noreturn]] void throw_error(const char* file, int line, const char* function,
                              const char* condition, const std::string& message);
}  // namespace error_detail

}  // namespace farthing

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

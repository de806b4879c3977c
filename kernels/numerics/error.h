// error.h — farthing::Error, the one exception type every layer throws, and the message builder
// its checks share. It sits in the lowest layer so that the kernels (kernels/cuda's
// FARTHING_CUDA_CHECK, cuda_check.h) throw the same type as the framework's FARTHING_CHECK
// (framework/core/error.h, which adds the macros and the out-of-line throw with its location)
// without including a layer above them. Header-only, host-only.
// Tested by: tests/core/test_core.cpp.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace farthing {

// A message for the user, naming the values involved (what()), and apart from it the place for
// developers (location()), which tools print only when asked (FARTHING_DEBUG=1).
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
// The arguments streamed one after another: FARTHING_CHECK's message parts.
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace error_detail

}  // namespace farthing

// error.cpp — formats the location and condition of a failed check.
#include "framework/core/error.h"

namespace farthing::error_detail {

void throw_error(const char* file, int line, const char* function, const char* condition,
                 const std::string& message) {
  std::ostringstream out;
  out << message;
  out << "\n  at " << file << ":" << line << " in " << function << "()";
  if (condition != nullptr) out << " [check failed: " << condition << "]";
  throw Error(out.str());
}

}  // namespace farthing::error_detail

// error.cpp — the location and condition of a failed check, kept beside the message.
#include "framework/core/error.h"

namespace farthing::error_detail {

void throw_error(const char* file, int line, const char* function, const char* condition,
                 const std::string& message) {
  std::ostringstream where;
  where << "at " << file << ":" << line << " in " << function << "()";
  if (condition != nullptr) where << " [check failed: " << condition << "]";
  throw Error(message, where.str());
}

}  // namespace farthing::error_detail

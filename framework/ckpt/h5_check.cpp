// h5_check.cpp — see h5_check.h.
#include "framework/ckpt/h5_check.h"

#include <mutex>

namespace farthing::h5_detail {

void silence_default_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

herr_t append_frame(unsigned n, const H5E_error2_t* frame, void* data) {
  auto* text = static_cast<std::string*>(data);
  char major[128] = "?", minor[128] = "?";
  H5Eget_msg(frame->maj_num, nullptr, major, sizeof major);
  H5Eget_msg(frame->min_num, nullptr, minor, sizeof minor);
  *text += error_detail::concat("\n    #", n, " ", frame->func_name, ": ",
                                frame->desc != nullptr ? frame->desc : "", " (", major, ": ",
                                minor, ")");
  return 0;
}

}  // namespace

std::string error_stack_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, append_frame, &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

void throw_h5_error(const char* expression, const char* file, int line, const char* function) {
  throw Error(error_detail::concat("HDF5 call failed; HDF5's error stack:", error_stack_text(),
                                   "\n  at ", file, ":", line, " in ", function,
                                   "() [check failed: ", expression, "]"));
}

}  // namespace farthing::h5_detail

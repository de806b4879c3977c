// fuzz_support.h — what every fuzz target (tests/fuzz/targets/*.cpp) shares.
//
// A target is one LLVMFuzzerTestOneInput that hands the input to one reader. Bad input must end
// in a farthing::Error (the reader's one-line message); anything else is a bug to fix:
//  - a crash, a hang, a leak or a sanitizer report (libFuzzer and ASan/UBSan catch those);
//  - std::bad_alloc or std::length_error: a size the file declared was trusted before it was
//    checked against the file, so guarded() aborts on them;
//  - any other exception (a json::type_error, std::out_of_range, ...): a message that names
//    neither the file nor what was expected, so guarded() aborts on those too.
// Readers that open paths get the input through a file (input_file); one directory per process.
// Built two ways (tests/fuzz/CMakeLists.txt): with libFuzzer (-DFARTHING_FUZZ=ON, clang) to
// search, and with replay_main.cpp in every build, where ctest replays the seed corpus and the
// regression inputs through the same entry point.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <typeinfo>

#include <unistd.h>

#include "framework/core/error.h"

namespace farthing::fuzz {

// How the last input ended; replay_main.cpp reports it and checks regressions against it.
struct Outcome {
  int errors = 0;          // inputs that ended in a farthing::Error
  std::string last_error;  // its message
};
inline Outcome& outcome() {
  static Outcome o;
  return o;
}

// Runs fn (one reader on one input). Only farthing::Error is an expected outcome.
template <class Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    ++outcome().errors;
    outcome().last_error = e.what();
    static const bool verbose = std::getenv("FARTHING_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "fuzz: refused: %s\n", e.what());
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "fuzz: std::bad_alloc escaped the reader: a declared size was trusted unchecked\n");
    std::abort();
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "fuzz: std::length_error (%s) escaped the reader: a declared size was trusted unchecked\n",
                 e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s escaped the reader instead of a farthing::Error: %s\n", typeid(e).name(),
                 e.what());
    std::abort();
  }
}

// The per-process scratch directory (removed at exit).
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      const std::filesystem::path base =
          std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
      path = base / ("farthing-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

// The input as the file scratch_dir()/name (readers pick their format by the extension).
inline std::filesystem::path input_file(const uint8_t* data, size_t size, const std::string& name) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace farthing::fuzz

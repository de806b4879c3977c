// replay_main.cpp — main() for a fuzz target outside libFuzzer: runs LLVMFuzzerTestOneInput on
// every file named (directories: every file in them, in name order), so ctest replays the seed
// corpus and the regression inputs in every build, sanitizers or not.
//   fuzz_TARGET [--expect-error] PATH...
// --expect-error: every input must end in a farthing::Error (regression inputs: each one is a
// bad file the reader once mishandled, and must now be refused with a message).
// Exit 0 when every input ran (and, with --expect-error, was refused); 1 otherwise.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  bool expect_error = false;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--expect-error") {
      expect_error = true;
    } else if (fs::is_directory(arg)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(arg)) {
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') in_dir.push_back(e.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", arg.c_str());
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs\n");
    return 1;
  }
  int failures = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int errors_before = farthing::fuzz::outcome().errors;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const bool refused = farthing::fuzz::outcome().errors > errors_before;
    std::printf("%s: %s%s\n", file.filename().c_str(), refused ? "refused: " : "ok",
                refused ? farthing::fuzz::outcome().last_error.c_str() : "");
    if (expect_error && !refused) {
      std::fprintf(stderr, "replay: %s was accepted, but it is a regression input that must be refused\n",
                   file.c_str());
      ++failures;
    }
  }
  std::printf("replay: %zu inputs, %d failures\n", files.size(), failures);
  return failures == 0 ? 0 : 1;
}

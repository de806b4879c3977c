// test_support.cpp — see test_support.h.
#include "tests/support/test_support.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "framework/core/error.h"

namespace farthing::test {

std::filesystem::path shared_dir() {
  const char* env = std::getenv("FARTHING_SHARED_DIR");
  std::filesystem::path dir = env != nullptr ? env : FARTHING_DEFAULT_SHARED_DIR;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  return std::filesystem::canonical(dir, ec);
}

// $FARTHING_TEST_DATA_DIR overrides the source-tree path compiled in, so test binaries
// carried to another machine (tools/gpu/bundle.sh) still find their goldens.
std::filesystem::path test_data_dir() {
  const char* env = std::getenv("FARTHING_TEST_DATA_DIR");
  return env != nullptr ? std::filesystem::path(env) : std::filesystem::path(FARTHING_TEST_DATA_DIR);
}

bool sim_sizes() {
  const char* env = std::getenv("FARTHING_SIM_SIZES");
  return env != nullptr && *env != '\0' && std::string(env) != "0";
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open ", path.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

double SplitMix64::normal() {
  const double u1 = (double(next() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = double(next() >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace farthing::test

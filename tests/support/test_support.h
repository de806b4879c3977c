// test_support.h — what many tests need: where ../shared and tests/data are, skip helpers,
// reading small binary goldens.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace farthing::test {

// ../shared (or $FARTHING_SHARED_DIR); empty when absent.
std::filesystem::path shared_dir();
// Skips the calling test (GTEST_SKIP) when ../shared is absent: use as
//   FARTHING_REQUIRE_SHARED(path);
#define FARTHING_REQUIRE_SHARED(path_var)                                                        \
  const std::filesystem::path path_var = ::farthing::test::shared_dir();                          \
  if (path_var.empty()) GTEST_SKIP() << "../shared is absent (set FARTHING_SHARED_DIR): skipped"

// True when $FARTHING_SIM_SIZES is set, as the gpu-sim ctest entries set it (tools/gpu/sim_check.sh):
// the CUDA parity tests then run small cases that still hit the edges (odd sizes, several
// blocks, partial tiles), since a GPU simulator executes only ~2M thread-instructions a second.
bool sim_sizes();

// tests/data in the source tree.
std::filesystem::path test_data_dir();

// Whole file as bytes; throws farthing::Error naming the file when unreadable.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// splitmix64: the deterministic generator shared with tools/goldens scripts (same constants),
// so goldens need not store their random inputs.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // uniform in [0, 1) with 24 bits
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }
  // standard normal by Box-Muller (double precision)
  double normal();
};

}  // namespace farthing::test

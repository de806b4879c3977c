// model_golden.h — reads the .fgld goldens written by tools/goldens/gen_model_goldens.py
// (format documented there) and compares tensors with the docs/numerics.md §8 metric.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tests/support/test_support.h"

namespace farthing::test {

struct GoldenTensor {
  uint32_t dtype = 0;  // 0 f32, 1 i32, 2 u8
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  const float* f32() const { return reinterpret_cast<const float*>(bytes.data()); }
  const int32_t* i32() const { return reinterpret_cast<const int32_t*>(bytes.data()); }
  std::string text() const { return std::string(bytes.begin(), bytes.end()); }
};

inline std::map<std::string, GoldenTensor> read_golden(const std::filesystem::path& path) {
  const std::vector<uint8_t> file = read_file_bytes(path);
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    FARTHING_CHECK(pos + n <= file.size(), "golden ", path.string(), " is truncated at byte ", pos);
    std::memcpy(dst, file.data() + pos, n);
    pos += n;
  };
  char magic[8];
  take(magic, 8);
  FARTHING_CHECK(std::memcmp(magic, "FGLD0001", 8) == 0, path.string(), " is not an FGLD0001 file");
  uint32_t count = 0;
  take(&count, 4);
  std::map<std::string, GoldenTensor> out;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0, rank = 0;
    take(&len, 4);
    std::string name(len, '\0');
    take(name.data(), len);
    GoldenTensor t;
    take(&t.dtype, 4);
    take(&rank, 4);
    t.dims.resize(rank);
    take(t.dims.data(), 8 * size_t(rank));
    const size_t elem = t.dtype == 2 ? 1 : 4;
    t.bytes.resize(size_t(t.numel()) * elem);
    take(t.bytes.data(), t.bytes.size());
    out[name] = std::move(t);
  }
  return out;
}

// Worst case of |a - ref| / (atol + rtol |ref|) over a tensor (<= 1 passes), with the
// largest absolute error and normalised MSE for reporting.
struct CompareResult {
  double worst_ratio = 0.0, max_abs = 0.0, nmse = 0.0;
  int64_t worst_index = -1;
};

inline CompareResult compare_tensors(const float* a, const float* ref, int64_t n, double atol,
                                     double rtol) {
  CompareResult r;
  double err2 = 0.0, ref2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - double(ref[i]));
    const double ratio = d / (atol + rtol * std::fabs(double(ref[i])));
    if (!(ratio <= r.worst_ratio)) {
      r.worst_ratio = ratio;
      r.worst_index = i;
    }
    r.max_abs = std::max(r.max_abs, d);
    err2 += d * d;
    ref2 += double(ref[i]) * double(ref[i]);
  }
  r.nmse = ref2 > 0 ? err2 / ref2 : err2;
  return r;
}

}  // namespace farthing::test

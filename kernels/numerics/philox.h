// philox.h — Philox4x32-10, the counter-based generator of cuRAND, JAX and Random123.
//
// A pure function of (counter, key): no state to carry, split or seed per thread, so any
// thread on any backend or rank computes the same bits for the same element.
// Relies on: host_device.h. Tested by: tests/numerics/test_philox.cpp (Random123 known-answer
// vectors) and the layout-invariance tests of stochastic rounding.
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

struct Philox4x32 {
  uint32_t v[4];
};

namespace philox_detail {
inline constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

FARTHING_HD void round(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
  const uint64_t p0 = uint64_t(kMul0) * ctr[0];
  const uint64_t p1 = uint64_t(kMul1) * ctr[2];
  const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
  const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
  ctr[0] = hi1 ^ ctr[1] ^ k0;
  ctr[1] = lo1;
  ctr[2] = hi0 ^ ctr[3] ^ k1;
  ctr[3] = lo0;
}
}  // namespace philox_detail

FARTHING_HD Philox4x32 philox4x32_10(Philox4x32 counter, uint32_t key0, uint32_t key1) {
  uint32_t c[4] = {counter.v[0], counter.v[1], counter.v[2], counter.v[3]};
  for (int r = 0; r < 10; ++r) {
    philox_detail::round(c, key0, key1);
    key0 += philox_detail::kWeyl0;
    key1 += philox_detail::kWeyl1;
  }
  return Philox4x32{{c[0], c[1], c[2], c[3]}};
}

}  // namespace farthing::numerics

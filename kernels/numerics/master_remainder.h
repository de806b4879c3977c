// master_remainder.h — a lossless fp32 master kept as the bf16 weight plus 16 bits
// (Transformer Engine's "master weight remainders", docs/numerics.md §7).
//
// The fp32 master's bit pattern M splits into its high half H and low half L. The bf16 weight
// is H rounded by L's top bit (w = H + (L >= 0x8000)) and the remainder is L, so the master is
// recovered exactly as ((w - (L >> 15)) << 16) | L: +2 bytes per parameter instead of +4.
// NOTE: rounding by L's top bit is round-to-nearest with ties away from zero (the bit pattern
// is sign-magnitude, so incrementing it grows the magnitude); it differs from the
// round-to-nearest-even cast only where L is exactly 0x8000. Ties-to-even could not be
// lossless: an even bf16 value's rounding cell holds 2^16 + 1 fp32 patterns, one too many
// for 16 bits. Stochastic rounding of the weight is incompatible with remainders (the
// weight would no longer determine H). A finite master within half a bf16 spacing of the
// largest float rounds to inf here, which stays lossless but is not saturated.
// Relies on: host_device.h. Tested by: tests/optim/test_master_remainder.cpp.
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

struct MasterSplit {
  uint16_t weight;     // bf16 bits
  uint16_t remainder;  // low 16 bits of the fp32 master
};

FARTHING_HD MasterSplit master_split(float master) {
  const uint32_t bits = f32_to_bits(master);
  const uint32_t low = bits & 0xFFFFu;
  return MasterSplit{uint16_t((bits >> 16) + (low >> 15)), uint16_t(low)};
}

FARTHING_HD float master_combine(uint16_t weight, uint16_t remainder) {
  const uint32_t high = uint32_t(uint16_t(weight - (remainder >> 15)));
  return bits_to_f32((high << 16) | uint32_t(remainder));
}

}  // namespace farthing::numerics

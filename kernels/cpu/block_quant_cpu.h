// block_quant_cpu.h — 8-bit block-wise quantize/dequantize over arrays on the host.
//
// One OpenMP task per 256-element block: absmax by numerics::block_absmax, then one code per
// element. The code is numerics::dynamic_map_nearest's answer, found on the CPU through a
// lookup table built from that same function (see QuantMapCpu), because the binary search's
// seven data-dependent branches cost ~40 ns an element on a CPU and the table costs ~1.
// src[0] sits on a block boundary; the last block may be short.
// Blocks with a finite non-zero absmax read a packed copy of the table for |y| <= 1 only
// (QuantMapCpu::unit, 128 KiB, one word an element); on AVX2 builds, eight lanes at a time
// through QuantMapCpu::unit_codes (block_quant_cpu_avx2.h), same codes.
// Tested by: tests/numerics/test_block_quant.cpp (table == search and packed table == search
// on every bucket edge and threshold, and on random values; shard invariance; bounds),
// tests/optim/test_adamw_avx2_matches_portable.cpp (AVX2 codes == portable codes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/numerics/dynamic_map.h"

namespace farthing::kernels {

// A map plus its acceleration table. For y whose top 16 bits are b (a "bf16 bucket", a
// contiguous interval of floats), the nearest code is base[b] + (y > threshold[b]): within a
// bucket the search's answer is monotone in y and changes at most once (checked when built;
// buckets where it would change twice, and inf/NaN buckets, are answered by the search).
struct QuantMapCpu {
  numerics::DynamicMap values{};
  bool is_signed = false;
  std::vector<int32_t> base;        // 65536 entries (int32: what a vector gather loads)
  std::vector<float> threshold;     // 65536 entries; +inf where the code never changes
  std::vector<uint8_t> use_search;  // 65536 flags: 1 where the table cannot answer
  // The same table for the 2 x 16384 buckets of |y| <= 1 only (what block quantization needs,
  // 128 KiB: stays in L2), one packed word per bucket: bits 0-7 base, bits 8-23 the
  // threshold's low 16 bits t (the threshold lies inside its bucket) in "key" order, where
  // key(y) = low16(y), bit-flipped for a negative bucket, so y > threshold iff key(y) > t;
  // t = 0xFFFF where the code never changes. Index: quant_map_unit_index. Built from base and
  // threshold; unit_valid is false (and the fast path unused) if a bucket in range needs the
  // search or has a threshold outside its bucket.
  std::vector<uint32_t> unit;  // 32768 entries
  bool unit_valid = false;
  // The same table as the AVX2 loop reads it (block_quant_cpu_avx2.h), indexed directly by
  // y's top 16 bits (65536 entries; only those of |y| <= 1 are read, 128 KiB) with the signed
  // map's sign fix folded in (y has x's sign): bits 0-15 t as in unit, bits 16-23 the final
  // code where key(y) <= t, bits 24-31 the final code where key(y) > t. Built from unit when
  // unit_valid (empty otherwise).
  std::vector<uint32_t> unit_codes;
};

inline uint32_t quant_map_unit_index(uint32_t y_bits) {
  return ((y_bits >> 17) & 0x4000u) | ((y_bits >> 16) & 0x3FFFu);
}

QuantMapCpu make_quant_map_cpu(numerics::MapSign sign);

// The code numerics::dynamic_map_nearest would give for y, read from the table.
uint8_t quant_map_lookup(const QuantMapCpu& map, float y);
// The same code through the packed |y| <= 1 table (requires map.unit_valid and |y| <= 1).
uint8_t quant_map_lookup_unit(const QuantMapCpu& map, float y);

void block_quantize_cpu(const QuantMapCpu& map, const float* src, uint8_t* codes, float* absmax, size_t n);
// One block of count <= 256 values (no threading): writes count codes, returns the absmax.
// What block_quantize_cpu runs per block, and what fused kernels (optim_cpu) call per block.
// Uses the AVX2 loop of block_quant_cpu_avx2.h where the build has AVX2 and the block allows
// (finite non-zero absmax, valid unit table); same bits as block_quantize_one_portable_cpu.
float block_quantize_one_cpu(const QuantMapCpu& map, const float* x, int count, uint8_t* codes);
// The plain loops only (the fallback, and the reference the AVX2 tests compare with).
float block_quantize_one_portable_cpu(const QuantMapCpu& map, const float* x, int count, uint8_t* codes);
void block_dequantize_cpu(const QuantMapCpu& map, const uint8_t* codes, const float* absmax, float* dst,
                          size_t n);

}  // namespace farthing::kernels

// h5_checksum.h — the checkpoint checksum: CRC-32 (zlib's polynomial) of a dataset's logical
// bytes (little-endian, row-major, padding stripped), independent of how it was split.
//
// NOTE: CRC-32 can be combined: crc(A ++ B) = combine(crc(A), crc(B), len(B)). Each rank
// checksums only its own slice; the slices' (offset, length, crc) are gathered and combined in
// offset order, so the stored value is the CRC of the whole tensor whatever the world size,
// and a reader of any world size (or h5py + zlib.crc32) recomputes the same number.
// Relies on: zlib (crc32_z, crc32_combine64).
// Tested by: tests/ckpt/test_h5_checkpoint.cpp (combine == whole, the writer at np 1/2/3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace farthing {

uint32_t crc32_bytes(const void* data, size_t bytes, uint32_t crc = 0);
uint32_t crc32_combine_pieces(uint32_t crc_first, uint32_t crc_second, uint64_t second_bytes);

// One rank's piece of a tensor, in elements of the flat row-major order.
struct ChecksumPiece {
  int64_t offset_elems = 0;
  int64_t count_elems = 0;
  uint32_t crc = 0;
};

// Sorts pieces by offset, checks that they tile [0, numel) exactly (throws naming the gap or
// the overlap and the tensor), and returns the combined CRC of the whole tensor.
uint32_t combine_checksum_pieces(std::vector<ChecksumPiece> pieces, int64_t numel,
                                 size_t elem_bytes, const char* tensor_name);

}  // namespace farthing

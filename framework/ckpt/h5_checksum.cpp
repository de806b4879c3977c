// h5_checksum.cpp — see h5_checksum.h.
#include "framework/ckpt/h5_checksum.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "framework/core/error.h"

namespace farthing {

uint32_t crc32_bytes(const void* data, size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong value = crc;
  while (bytes > 0) {  // crc32_z takes z_size_t, but stay within uInt pieces for old zlibs
    const size_t piece = std::min<size_t>(bytes, size_t(1) << 30);
    value = crc32(value, p, uInt(piece));
    p += piece;
    bytes -= piece;
  }
  return uint32_t(value);
}

uint32_t crc32_combine_pieces(uint32_t crc_first, uint32_t crc_second, uint64_t second_bytes) {
  return uint32_t(crc32_combine64(crc_first, crc_second, z_off64_t(second_bytes)));
}

uint32_t combine_checksum_pieces(std::vector<ChecksumPiece> pieces, int64_t numel,
                                 size_t elem_bytes, const char* tensor_name) {
  std::stable_sort(pieces.begin(), pieces.end(), [](const ChecksumPiece& a, const ChecksumPiece& b) {
    return a.offset_elems < b.offset_elems;
  });
  uint32_t crc = 0;
  int64_t next = 0;
  for (const ChecksumPiece& piece : pieces) {
    if (piece.count_elems == 0) continue;
    FARTHING_CHECK(piece.offset_elems == next, "tensor '", tensor_name, "': the ranks' slices ",
                   piece.offset_elems < next ? "overlap" : "leave a gap", " at element ",
                   std::min(next, piece.offset_elems), " (next slice starts at ",
                   piece.offset_elems, ", expected ", next,
                   "); each element must be written by exactly one rank");
    crc = crc32_combine_pieces(crc, piece.crc, uint64_t(piece.count_elems) * elem_bytes);
    next += piece.count_elems;
  }
  FARTHING_CHECK(next == numel, "tensor '", tensor_name, "': the ranks' slices cover [0, ", next,
                 ") of ", numel, " elements; each element must be written by exactly one rank");
  return crc;
}

}  // namespace farthing

// token_file.h — the token file `farthing tokenize -o` writes and datasets read.
//
// Layout (little-endian), 24-byte header then the ids:
//   char     magic[4]     "FTOK"
//   uint32   version      1
//   uint32   vocab_size   of the tokenizer that wrote it (every id is < vocab_size)
//   uint32   header_bytes 24 (where the ids start)
//   uint64   n_tokens
//   uint32   ids[n_tokens]
// Relies on: core/error.h. Tested by: tests/tokenizers/test_token_file.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace farthing::data {

inline constexpr uint32_t kTokenFileVersion = 1;
inline constexpr uint32_t kTokenFileHeaderBytes = 24;

void write_token_file(const std::filesystem::path& path, std::span<const int32_t> ids, uint32_t vocab_size);

struct TokenFile {
  uint32_t vocab_size = 0;
  std::vector<uint32_t> ids;
};
// Checks the magic, version, size and that every id is below vocab_size.
TokenFile read_token_file(const std::filesystem::path& path);

}  // namespace farthing::data

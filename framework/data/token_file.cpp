// token_file.cpp — see token_file.h.
#include "framework/data/token_file.h"

#include <cstring>
#include <fstream>

#include "framework/ckpt/mapped_file.h"
#include "framework/core/checked_math.h"
#include "framework/core/error.h"

namespace farthing::data {

void write_token_file(const std::filesystem::path& path, std::span<const int32_t> ids, uint32_t vocab_size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  FARTHING_CHECK(out.good(), "cannot create token file ", path.string());
  char header[kTokenFileHeaderBytes] = {'F', 'T', 'O', 'K'};
  const uint32_t version = kTokenFileVersion, header_bytes = kTokenFileHeaderBytes;
  const uint64_t n = ids.size();
  std::memcpy(header + 4, &version, 4);
  std::memcpy(header + 8, &vocab_size, 4);
  std::memcpy(header + 12, &header_bytes, 4);
  std::memcpy(header + 16, &n, 8);
  out.write(header, sizeof(header));
  for (int32_t id : ids) {
    FARTHING_CHECK(id >= 0 && uint32_t(id) < vocab_size, "token id ", id, " is outside the vocabulary of ", vocab_size);
  }
  out.write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * 4));
  out.flush();
  FARTHING_CHECK(out.good(), "writing token file ", path.string(), " failed (disk full?)");
}

TokenFile read_token_file(const std::filesystem::path& path) {
  ckpt::MappedFile file(path);
  ckpt::ByteReader r(file.data(), file.size(), file.name());
  const std::string magic = r.read_bytes(4, "the token file magic");
  FARTHING_CHECK(magic == "FTOK", file.name(), " is not a farthing token file (magic is not FTOK)");
  const uint32_t version = r.read<uint32_t>("the version");
  FARTHING_CHECK(version == kTokenFileVersion, file.name(), " is token file version ", version, "; expected ",
                 kTokenFileVersion);
  TokenFile t;
  t.vocab_size = r.read<uint32_t>("the vocabulary size");
  const uint32_t header_bytes = r.read<uint32_t>("the header size");
  const uint64_t n = r.read<uint64_t>("the token count");
  FARTHING_CHECK(header_bytes >= kTokenFileHeaderBytes && header_bytes <= file.size(), file.name(),
                 ": the header size is ", header_bytes, "; expected at least ", kTokenFileHeaderBytes,
                 " and at most the file's ", file.size(), " bytes");
  r.seek(header_bytes);
  const uint64_t id_bytes = checked_mul(n, 4, file.name(), ": the token count");
  r.need(id_bytes, "the token ids");
  FARTHING_CHECK(file.size() == header_bytes + id_bytes, file.name(), " has ", file.size(),
                 " bytes but its header says ", header_bytes, " + 4 * ", n);
  t.ids.resize(size_t(n));
  if (n > 0) std::memcpy(t.ids.data(), file.data() + header_bytes, size_t(n) * 4);  // empty: data() may be null
  for (uint64_t i = 0; i < n; ++i) {
    FARTHING_CHECK(t.ids[i] < t.vocab_size, file.name(), ": token ", i, " is ", t.ids[i], ", not below the vocabulary size ",
                   t.vocab_size);
  }
  return t;
}

}  // namespace farthing::data

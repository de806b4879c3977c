// mapped_file.h — a read-only memory map of a whole file, and a bounds-checked cursor over it.
//
// Checkpoint readers parse headers through ByteReader so that every read past the end of a
// truncated file becomes a farthing::Error naming the file, the offset and what was being read.
// Relies on: POSIX mmap. Tested by: tests/ckpt/test_bad_files.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "framework/core/error.h"

namespace farthing::ckpt {

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size, std::string file) : data_(data), size_(size), file_(std::move(file)) {}

  uint64_t offset() const { return offset_; }
  void seek(uint64_t offset) { offset_ = offset; }
  void need(uint64_t bytes, std::string_view what) const {
    FARTHING_CHECK(bytes <= size_ && offset_ <= size_ - bytes, "file ", file_, " is truncated: reading ",
                   what, " needs ", bytes, " bytes at offset ", offset_, " but the file has ", size_,
                   " bytes");
  }
  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, data_ + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string read_bytes(uint64_t n, std::string_view what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + offset_), size_t(n));
    offset_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  std::string file_;
  uint64_t offset_ = 0;
};

}  // namespace farthing::ckpt

// h5_checkpoint_reader.h — reads a checkpoint written by H5CheckpointWriter, on one process,
// at any world size: each rank opens the file on its own (plain POSIX I/O) and reads exactly
// the [offset, count) slices its layout needs, so a save at np=2 resumes at np=1 or np=3.
//
// Opening refuses (naming the file) anything that is not a complete farthing checkpoint: not
// HDF5 or truncated, no completion mark, an unknown format version. verify() recomputes every
// dataset's CRC-32 and names the first damaged dataset; load paths call it before trusting the
// contents (verify_distributed() splits the work over ranks).
// Relies on: HDF5 (any build), zlib, h5_checksum, framework/core.
// Tested by: tests/ckpt/test_h5_checkpoint.cpp, tests/ckpt/test_h5_reshard.sh.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace farthing {

class Communicator;

struct H5TensorInfo {
  std::string name;  // "model/wte"
  DType dtype = DType::kF32;
  Shape shape;
  int64_t numel = 0;
  uint32_t crc32 = 0;
};

class H5CheckpointReader {
 public:
  explicit H5CheckpointReader(std::filesystem::path path);
  ~H5CheckpointReader();
  H5CheckpointReader(const H5CheckpointReader&) = delete;
  H5CheckpointReader& operator=(const H5CheckpointReader&) = delete;

  const std::filesystem::path& path() const { return path_; }
  int64_t format_version() const { return format_version_; }
  // Tensors (not strings), sorted by name.
  const std::vector<H5TensorInfo>& tensors() const { return tensors_; }
  const std::vector<std::string>& strings() const { return strings_; }
  bool has_tensor(const std::string& name) const;
  // Throws naming the file and the missing tensor.
  const H5TensorInfo& tensor(const std::string& name) const;

  // out <- elements [offset, offset + out.numel()) of the flat row-major tensor; out is a
  // contiguous host tensor of the stored dtype.
  void read_slice(const std::string& name, int64_t offset, const Tensor& out) const;
  std::string read_string(const std::string& name) const;

  bool has_attribute(const std::string& name) const;
  int64_t attribute_i64(const std::string& name) const;
  double attribute_f64(const std::string& name) const;
  std::string attribute_string(const std::string& name) const;
  // Attributes of a group ("optim"); has_group_attribute is false where the group is absent.
  bool has_group_attribute(const std::string& group, const std::string& name) const;
  std::string group_attribute_string(const std::string& group, const std::string& name) const;
  std::vector<float> group_attribute_f32_array(const std::string& group, const std::string& name) const;

  // Recomputes every dataset's checksum (streamed, bounded memory); throws naming the file and
  // the first damaged dataset.
  void verify() const;
  // The same, each rank checking a share of the datasets; every rank throws if any is damaged.
  void verify_distributed(Communicator& comm) const;

 private:
  std::string verify_one(size_t index) const;  // "" when intact, else what is wrong

  std::filesystem::path path_;
  int64_t file_ = -1;  // hid_t
  int64_t format_version_ = 0;
  std::vector<H5TensorInfo> tensors_;
  std::vector<std::string> strings_;
  std::vector<std::pair<std::string, uint32_t>> checked_;  // every dataset and its stored CRC
};

}  // namespace farthing

// gguf.h — the GGUF container (versions 2 and 3): metadata key/values, tensor infos, data.
//
// Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv × (string key, u32 type,
// value), then n_tensors × (string name, u32 n_dims, u64 dims[n_dims] (innermost first),
// u32 ggml type, u64 offset), padding to general.alignment (default 32), then tensor data at
// data_offset + offset. Strings are u64 length + bytes; arrays are u32 element type + u64
// count + elements. Every offset and size is checked against the file size at open.
// Metadata values become JSON (arrays as arrays; the tokenizer lives in them).
// Relies on: mapped_file.h, gguf_quant.h. Tested by: tests/ckpt/test_gguf.cpp, tests/tokenizers/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ckpt/mapped_file.h"

namespace farthing::ckpt {

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) one
  uint32_t type = 0;          // ggml type code
  uint64_t offset = 0;        // from the start of the data section
  uint64_t n_elems = 0;
};

class GgufFile {
 public:
  explicit GgufFile(const std::filesystem::path& path);

  const std::string& name() const { return file_.name(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const nlohmann::json& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  bool has(const std::string& key) const { return metadata_.contains(key); }
  // Typed metadata access; throws naming the file and key when absent or of another type.
  const nlohmann::json& at(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback = "") const;

  const GgufTensorInfo* find_tensor(const std::string& tensor_name) const;
  // Raw bytes of a tensor (checked to lie inside the file when the file was opened).
  const uint8_t* tensor_data(const GgufTensorInfo& info) const { return file_.data() + data_offset_ + info.offset; }
  // Dequantized to fp32 (throws for unsupported types, naming the tensor and the file).
  void dequantize(const GgufTensorInfo& info, float* dst) const;

 private:
  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace farthing::ckpt

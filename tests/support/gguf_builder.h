// gguf_builder.h — writes small GGUF v3 files in tests (synthetic models, tokenizer-only
// vocabularies, deliberately broken files). Follows the layout documented in
// framework/ckpt/gguf.h; header-only so any test area can use it.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace farthing::test {

class GgufBuilder {
 public:
  void add_string(const std::string& key, const std::string& v) { key_type(key, 8); str(kv_, v); }
  void add_u32(const std::string& key, uint32_t v) { key_type(key, 4); pod(kv_, v); }
  void add_f32(const std::string& key, float v) { key_type(key, 6); pod(kv_, v); }
  void add_bool(const std::string& key, bool v) { key_type(key, 7); pod(kv_, uint8_t(v)); }
  void add_strings(const std::string& key, const std::vector<std::string>& v) {
    key_type(key, 9);
    pod(kv_, uint32_t(8));
    pod(kv_, uint64_t(v.size()));
    for (const std::string& s : v) str(kv_, s);
  }
  void add_f32s(const std::string& key, const std::vector<float>& v) { array(key, 6, v); }
  void add_i32s(const std::string& key, const std::vector<int32_t>& v) { array(key, 5, v); }
  // dims in ggml order (innermost first); data already in the type's block layout.
  void add_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::string data) {
    tensors_.push_back({name, std::move(dims), type, std::move(data)});
  }
  std::string build(uint64_t alignment = 32) const {
    std::string out = "GGUF";
    pod(out, uint32_t(3));
    pod(out, uint64_t(tensors_.size()));
    pod(out, uint64_t(n_kv_));
    out += kv_;
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor& t : tensors_) {
      str(out, t.name);
      pod(out, uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) pod(out, d);
      pod(out, t.type);
      pod(out, offset);
      offsets.push_back(offset);
      offset = (offset + t.data.size() + alignment - 1) / alignment * alignment;
    }
    while (out.size() % alignment) out += '\0';
    const size_t data_start = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(data_start + offsets[i], '\0');
      out += tensors_[i].data;
    }
    return out;
  }
  void write(const std::string& path, uint64_t alignment = 32) const {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const std::string bytes = build(alignment);
    f.write(bytes.data(), std::streamsize(bytes.size()));
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
  };
  template <class T>
  static void pod(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  static void str(std::string& out, const std::string& s) {
    pod(out, uint64_t(s.size()));
    out += s;
  }
  void key_type(const std::string& key, uint32_t type) {
    str(kv_, key);
    pod(kv_, type);
    ++n_kv_;
  }
  template <class T>
  void array(const std::string& key, uint32_t elem_type, const std::vector<T>& v) {
    key_type(key, 9);
    pod(kv_, elem_type);
    pod(kv_, uint64_t(v.size()));
    for (const T& x : v) pod(kv_, x);
  }
  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace farthing::test

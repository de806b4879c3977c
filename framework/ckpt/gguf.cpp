// gguf.cpp — see gguf.h.
#include "framework/ckpt/gguf.h"

#include "framework/ckpt/gguf_quant.h"
#include "framework/core/checked_math.h"

namespace farthing::ckpt {

namespace {
enum GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8,
  kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

std::string read_string(ByteReader& r, const char* what) {
  const uint64_t n = r.read<uint64_t>(what);
  return r.read_bytes(n, what);
}

// NOTE: arrays of arrays recurse; real files nest one level (none in llama.cpp's writers), so a
// deeper nesting is refused before it can exhaust the stack.
constexpr int kMaxArrayDepth = 8;

nlohmann::json read_value(ByteReader& r, uint32_t type, const std::string& key, const std::string& file,
                          int depth = 0) {
  switch (type) {
    case kU8: return r.read<uint8_t>("a u8 value");
    case kI8: return r.read<int8_t>("an i8 value");
    case kU16: return r.read<uint16_t>("a u16 value");
    case kI16: return r.read<int16_t>("an i16 value");
    case kU32: return r.read<uint32_t>("a u32 value");
    case kI32: return r.read<int32_t>("an i32 value");
    case kF32: return r.read<float>("an f32 value");
    case kBool: return r.read<uint8_t>("a bool value") != 0;
    case kString: return read_string(r, "a string value");
    case kU64: return r.read<uint64_t>("a u64 value");
    case kI64: return r.read<int64_t>("an i64 value");
    case kF64: return r.read<double>("an f64 value");
    case kArray: {
      const uint32_t elem_type = r.read<uint32_t>("an array element type");
      const uint64_t count = r.read<uint64_t>("an array length");
      check_depth(depth + 1, kMaxArrayDepth, "metadata '", key, "' in ", file, " (arrays of arrays)");
      r.need(count, "array elements");  // each element takes at least one byte
      nlohmann::json array = nlohmann::json::array();
      array.get_ref<nlohmann::json::array_t&>().reserve(size_t(count));
      for (uint64_t i = 0; i < count; ++i) array.push_back(read_value(r, elem_type, key, file, depth + 1));
      return array;
    }
  }
  FARTHING_FAIL("metadata '", key, "' in ", file, " has unknown value type ", type);
}
}  // namespace

GgufFile::GgufFile(const std::filesystem::path& path) : file_(path) {
  const std::string& file = file_.name();
  ByteReader r(file_.data(), file_.size(), file);
  const std::string magic = r.read_bytes(4, "the GGUF magic");
  FARTHING_CHECK(magic == "GGUF", file, " is not a GGUF file: its first bytes are not 'GGUF'");
  version_ = r.read<uint32_t>("the GGUF version");
  FARTHING_CHECK(version_ == 2 || version_ == 3, file, " is GGUF version ", version_,
                 "; only versions 2 and 3 are supported");
  const uint64_t n_tensors = r.read<uint64_t>("the tensor count");
  const uint64_t n_kv = r.read<uint64_t>("the metadata count");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = read_string(r, "a metadata key");
    const uint32_t type = r.read<uint32_t>("a metadata value type");
    metadata_[key] = read_value(r, type, key, file);
  }
  const int64_t alignment = get_int("general.alignment", 32);
  FARTHING_CHECK(alignment > 0 && alignment <= (int64_t(1) << 30) && (alignment & (alignment - 1)) == 0, file,
                 ": general.alignment ", alignment, " is not a power of two from 1 to 2^30");
  alignment_ = uint64_t(alignment);
  r.need(n_tensors, "tensor infos");
  tensors_.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo info;
    info.name = read_string(r, "a tensor name");
    const uint32_t n_dims = r.read<uint32_t>("a tensor rank");
    FARTHING_CHECK(n_dims >= 1 && n_dims <= 4, "tensor '", info.name, "' in ", file, " has ", n_dims,
                   " dimensions; GGUF allows 1 to 4");
    info.n_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = r.read<uint64_t>("a tensor dimension");
      FARTHING_CHECK(dim > 0 && dim < (uint64_t(1) << 40), "tensor '", info.name, "' in ", file,
                     " has dimension ", dim);
      info.dims.push_back(int64_t(dim));
      FARTHING_CHECK(!__builtin_mul_overflow(info.n_elems, dim, &info.n_elems) && info.n_elems < (uint64_t(1) << 48),
                     "tensor '", info.name, "' in ", file, " has an impossible element count");
    }
    info.type = r.read<uint32_t>("a tensor type");
    info.offset = r.read<uint64_t>("a tensor offset");
    tensors_.push_back(std::move(info));
  }
  data_offset_ = (r.offset() + alignment_ - 1) / alignment_ * alignment_;
  for (const GgufTensorInfo& info : tensors_) {
    FARTHING_CHECK(info.offset % alignment_ == 0, "tensor '", info.name, "' in ", file, " starts at offset ",
                   info.offset, ", not a multiple of the alignment ", alignment_);
    if (!ggml_type_supported(info.type)) {
      // Reported when (if) the tensor is read, and its byte size is unknown here; but no ggml type
      // stores an element in less than one bit, so a count past 8 x the bytes after its offset is
      // damage, refused before a reader sizes an fp32 buffer by it.
      const uint64_t begin = checked_add(data_offset_, info.offset, "tensor '", info.name, "' in ", file, " offset");
      FARTHING_CHECK(begin <= file_.size() && info.n_elems / 8 <= file_.size() - begin, "file ", file,
                     " is truncated: tensor '", info.name, "' (", ggml_type_name(info.type), ") declares ",
                     info.n_elems, " elements from byte ", begin, " but the file has ", file_.size(), " bytes");
      continue;
    }
    FARTHING_CHECK(info.n_elems % ggml_block_elems(info.type) == 0, "tensor '", info.name, "' in ", file, " has ",
                   info.n_elems, " elements, not a whole number of ", ggml_type_name(info.type), " blocks of ",
                   ggml_block_elems(info.type));
    const uint64_t bytes = ggml_type_bytes(info.type, info.n_elems);
    // offset is the file's word: data_offset_ + offset + bytes may wrap past 2^64 back into the file.
    const uint64_t begin = checked_add(data_offset_, info.offset, "tensor '", info.name, "' in ", file, " offset");
    const uint64_t end = checked_add(begin, bytes, "tensor '", info.name, "' in ", file, " end");
    FARTHING_CHECK(end <= file_.size(), "file ", file, " is truncated: tensor '", info.name, "' (",
                   ggml_type_name(info.type), ", ", info.n_elems, " elements) needs bytes [", begin, ", ", end,
                   ") but the file has ", file_.size(), " bytes");
  }
}

const nlohmann::json& GgufFile::at(const std::string& key) const {
  auto it = metadata_.find(key);
  FARTHING_CHECK(it != metadata_.end(), "GGUF metadata key '", key, "' is missing from ", name());
  return *it;
}

int64_t GgufFile::get_int(const std::string& key) const {
  const nlohmann::json& v = at(key);
  FARTHING_CHECK(v.is_number_integer(), "GGUF metadata '", key, "' in ", name(), " is not an integer");
  FARTHING_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX), "GGUF metadata '", key, "' in ",
                 name(), " is ", v.get<uint64_t>(), ", past the largest signed 64-bit integer");
  return v.get<int64_t>();
}
int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}
double GgufFile::get_float(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  FARTHING_CHECK(v.is_number(), "GGUF metadata '", key, "' in ", name(), " is not a number");
  return v.get<double>();
}
std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  FARTHING_CHECK(v.is_string(), "GGUF metadata '", key, "' in ", name(), " is not a string");
  return v.get<std::string>();
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& tensor_name) const {
  for (const GgufTensorInfo& info : tensors_) {
    if (info.name == tensor_name) return &info;
  }
  return nullptr;
}

void GgufFile::dequantize(const GgufTensorInfo& info, float* dst) const {
  FARTHING_CHECK(ggml_type_supported(info.type), "tensor '", info.name, "' in ", name(), " has quant type ",
                 ggml_type_name(info.type), " (", info.type, "), which is not supported; expected one of "
                 "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0");
  ggml_dequantize(info.type, tensor_data(info), dst, info.n_elems);
}

}  // namespace farthing::ckpt

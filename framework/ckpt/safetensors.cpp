// safetensors.cpp — see safetensors.h.
#include "framework/ckpt/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>

#include "framework/ckpt/mapped_file.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::ckpt {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

size_t dtype_bytes_of(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  FARTHING_CHECK(in.good(), "cannot open ", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    FARTHING_FAIL(path.string(), " is not valid JSON: ", e.what());
  }
}

// fp32 values of n elements of a safetensors dtype.
void convert_to_f32(const std::string& dtype, const uint8_t* src, float* dst, int64_t n) {
  if (dtype == "F32") {
    if (n > 0) std::memcpy(dst, src, size_t(n) * 4);  // an empty tensor has no buffer: memcpy(nullptr) is UB
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = dtype == "BF16" ? numerics::bf16_to_f32(bits) : numerics::fp16_to_f32(bits);
  }
}

// Where one tensor's bytes lie in the data section: [begin, end).
struct DataSpan {
  uint64_t begin, end;
  std::string tensor;
};

// The data section must be tiled by the tensors exactly, as the format's own validator demands:
// no two tensors share a byte, and no byte (a hole before, between or after them) belongs to none.
// Shared or unclaimed bytes are how polyglot and confused-deputy files hide a second reading of
// the same file, so they are refused rather than ignored. Empty tensors ([x, x)) take no bytes.
void check_spans_tile_data(std::vector<DataSpan> spans, uint64_t data_bytes, const std::string& file) {
  std::sort(spans.begin(), spans.end(), [](const DataSpan& a, const DataSpan& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;        // every byte before this one belongs to exactly one tensor
  const DataSpan* last = nullptr;  // the tensor that ends at `covered`
  for (const DataSpan& s : spans) {
    FARTHING_CHECK(s.begin >= covered, "file ", file, ": tensors '", last ? last->tensor : "", "' (data bytes [",
                   last ? last->begin : 0, ", ", covered, ")) and '", s.tensor, "' ([", s.begin, ", ", s.end,
                   ")) overlap; safetensors tensors must not share bytes");
    FARTHING_CHECK(s.begin == covered, "file ", file, ": data bytes [", covered, ", ", s.begin, ") ",
                   last ? "between tensor '" + last->tensor + "' and" : std::string("before"), " tensor '",
                   s.tensor, "' belong to no tensor; safetensors tensors must fill the data section without gaps");
    if (s.end > s.begin || !last) last = &s;
    covered = s.end;
  }
  FARTHING_CHECK(covered == data_bytes, "file ", file, ": data bytes [", covered, ", ", data_bytes, ") ",
                 last ? "after the last tensor '" + last->tensor + "'" : std::string("(the file has no tensor)"),
                 " belong to no tensor; a safetensors file ends where its last tensor does");
}

// Reads every tensor of one .safetensors file into model.tensors (lazy: decoders over the mapping).
void read_file_into(const fs::path& path, ModelFile& model, bool lazy) {
  const auto mapped = std::make_shared<MappedFile>(path);
  const MappedFile& file = *mapped;
  const std::string& name = file.name();
  ByteReader r(file.data(), file.size(), name);
  const uint64_t header_bytes = r.read<uint64_t>("the safetensors header length");
  FARTHING_CHECK(header_bytes <= file.size() - 8, "file ", name, " is truncated or not safetensors: its header "
                 "length field says ", header_bytes, " bytes but only ", file.size() - 8, " follow");
  const char* header_begin = reinterpret_cast<const char*>(file.data() + 8);
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_bytes);
  } catch (const json::exception& e) {
    FARTHING_FAIL(name, " is not a safetensors file: its header is not JSON (", e.what(), ")");
  }
  FARTHING_CHECK(header.is_object(), name, " is not a safetensors file: its header is not a JSON object");
  const uint64_t data_begin = 8 + header_bytes;
  const uint64_t data_bytes = file.size() - data_begin;
  std::vector<DataSpan> spans;
  for (const auto& [tensor, entry] : header.items()) {
    if (tensor == "__metadata__") continue;
    const std::string where = "tensor '" + tensor + "' in " + name;
    try {
      FARTHING_CHECK(entry.is_object() && entry.contains("dtype") && entry.contains("shape") &&
                         entry.contains("data_offsets"),
                     where, " lacks dtype, shape or data_offsets");
      const std::string dtype = entry["dtype"].get<std::string>();
      const size_t elem_bytes = dtype_bytes_of(dtype);
      FARTHING_CHECK(elem_bytes > 0, where, " has dtype ", dtype, "; expected F32, F16 or BF16");
      const std::vector<int64_t> dims = entry["shape"].get<std::vector<int64_t>>();
      const Shape shape = shape_from_dims(dims, where);
      const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
      FARTHING_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1], where, " has bad data_offsets");
      FARTHING_CHECK(offsets[1] <= data_bytes, "file ", name, " is truncated: ", where, " needs data bytes [",
                     offsets[0], ", ", offsets[1], ") but the data section has ", data_bytes, " bytes");
      const uint64_t expected = uint64_t(shape.numel()) * elem_bytes;
      FARTHING_CHECK(offsets[1] - offsets[0] == expected, where, " has shape ", shape.str(), " of ", dtype,
                     ", which needs ", expected, " bytes, but its data_offsets span ", offsets[1] - offsets[0]);
      FARTHING_CHECK(!model.has(tensor), where, " appears twice in the checkpoint");
      spans.push_back({offsets[0], offsets[1], tensor});
      const uint8_t* src = file.data() + data_begin + offsets[0];
      const int64_t n = shape.numel();
      ModelTensor t;
      if (lazy) {
        t.shape = shape;
        t.decode = [mapped, src, n, dtype](float* dst) { convert_to_f32(dtype, src, dst, n); };
      } else {
        t = make_model_tensor(shape);
        convert_to_f32(dtype, src, t.f32(), n);
      }
      model.tensors.emplace(tensor, std::move(t));
    } catch (const json::exception& e) {
      FARTHING_FAIL(where, " has a malformed header entry (", e.what(), "): ", entry.dump());
    }
  }
  check_spans_tile_data(std::move(spans), data_bytes, name);
}

void write_file(const fs::path& path, const ModelFile& model, const std::vector<const std::string*>& names,
                DType dtype) {
  const char* dtype_name = dtype == DType::kF32 ? "F32" : dtype == DType::kBF16 ? "BF16" : "F16";
  const size_t elem_bytes = dtype_size_bytes(dtype);
  json header = json::object();
  uint64_t offset = 0;
  for (const std::string* n : names) {
    const ModelTensor& t = model.tensors.at(*n);
    std::vector<int64_t> dims(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.rank);
    const uint64_t bytes = uint64_t(t.numel()) * elem_bytes;
    header[*n] = {{"dtype", dtype_name}, {"shape", dims}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  FARTHING_CHECK(out.good(), "cannot create ", path.string());
  const uint64_t header_bytes = text.size();
  out.write(reinterpret_cast<const char*>(&header_bytes), 8);
  out.write(text.data(), std::streamsize(text.size()));
  std::vector<uint16_t> narrow;
  for (const std::string* n : names) {
    const ModelTensor& t = model.tensors.at(*n);
    const float* src = t.f32();
    if (dtype == DType::kF32) {
      out.write(reinterpret_cast<const char*>(src), std::streamsize(t.numel() * 4));
      continue;
    }
    narrow.resize(size_t(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      narrow[size_t(i)] = dtype == DType::kBF16 ? numerics::f32_to_bf16_rne(src[i]) : numerics::f32_to_fp16_rne(src[i]);
    }
    out.write(reinterpret_cast<const char*>(narrow.data()), std::streamsize(narrow.size() * 2));
  }
  out.flush();
  FARTHING_CHECK(out.good(), "writing ", path.string(), " failed (disk full?)");
}

}  // namespace

ModelFile read_safetensors(const fs::path& path, bool lazy) {
  ModelFile model;
  model.format = "safetensors";
  model.source = path.string();
  fs::path dir = path, index, single;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "model.safetensors.index.json")) index = path / "model.safetensors.index.json";
    else if (fs::exists(path / "model.safetensors")) single = path / "model.safetensors";
    else FARTHING_FAIL(path.string(), " holds neither model.safetensors nor model.safetensors.index.json");
  } else {
    FARTHING_CHECK(fs::exists(path), "checkpoint ", path.string(), " does not exist");
    dir = path.parent_path();
    if (path.string().ends_with(".index.json")) index = path;
    else single = path;
  }
  if (!index.empty()) {
    const json idx = read_json_file(index);
    FARTHING_CHECK(idx.contains("weight_map") && idx["weight_map"].is_object(), index.string(),
                   " has no weight_map object");
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : idx["weight_map"].items()) shards.insert(shard.get<std::string>());
    for (const std::string& shard : shards) read_file_into(dir / shard, model, lazy);
    for (const auto& [tensor, shard] : idx["weight_map"].items()) {
      FARTHING_CHECK(model.has(tensor), "tensor '", tensor, "' is listed in ", index.string(), " but missing from ",
                     (dir / shard.get<std::string>()).string());
    }
  } else {
    read_file_into(single, model, lazy);
  }
  if (fs::exists(dir / "config.json")) model.config = read_json_file(dir / "config.json");
  return model;
}

void write_safetensors(const fs::path& dir, const ModelFile& model, const SafetensorsWriteOptions& options) {
  FARTHING_CHECK(options.dtype == DType::kF32 || options.dtype == DType::kBF16 || options.dtype == DType::kF16,
                 "safetensors export dtype must be f32, bf16 or f16, not ", dtype_name(options.dtype));
  FARTHING_CHECK(options.max_shard_bytes > 0, "max_shard_bytes must be positive");
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "config.json", std::ios::trunc);
    FARTHING_CHECK(out.good(), "cannot create ", (dir / "config.json").string());
    out << model.config.dump(2) << "\n";
  }
  const size_t elem_bytes = dtype_size_bytes(options.dtype);
  std::vector<std::vector<const std::string*>> shards(1);
  uint64_t shard_bytes = 0, total_bytes = 0;
  for (const auto& [name, t] : model.tensors) {
    const uint64_t bytes = uint64_t(t.numel()) * elem_bytes;
    if (!shards.back().empty() && shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&name);
    shard_bytes += bytes;
    total_bytes += bytes;
  }
  // Remove files of an earlier export so the directory describes exactly this model.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string fname = entry.path().filename().string();
    if (fname.starts_with("model") && (fname.ends_with(".safetensors") || fname == "model.safetensors.index.json")) {
      fs::remove(entry.path());
    }
  }
  if (shards.size() == 1) {
    write_file(dir / "model.safetensors", model, shards[0], options.dtype);
    return;
  }
  json weight_map = json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char fname[64];
    std::snprintf(fname, sizeof(fname), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_file(dir / fname, model, shards[i], options.dtype);
    for (const std::string* n : shards[i]) weight_map[*n] = fname;
  }
  json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
  std::ofstream out(dir / "model.safetensors.index.json", std::ios::trunc);
  FARTHING_CHECK(out.good(), "cannot create ", (dir / "model.safetensors.index.json").string());
  out << index.dump(2) << "\n";
}

}  // namespace farthing::ckpt

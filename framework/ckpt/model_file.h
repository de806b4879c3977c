// model_file.h — what every checkpoint reader returns: the model's config (HF config.json
// fields, whatever the file format) and its tensors as fp32 host buffers under HF names — or,
// opened lazily (read_model.h's open_model_file), as decoders over the memory-mapped file, so
// that a trainer converts one unit at a time and never holds the whole model in fp32.
//
// Readers: safetensors.h, gguf_model.h, llama2c.h. Mapping names onto a model layout is the
// model code's job; at()/expect() give it errors that name the file, the tensor and the shape.
// Relies on: core/memory.h, nlohmann/json. Tested by: tests/ckpt/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/backend/buffer.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "framework/core/tensor.h"

namespace farthing::ckpt {

struct ModelTensor {
  Shape shape;
  Buffer data;  // fp32, host, charged to MemoryCategory::kWeights; empty when opened lazily
  // Opened lazily: writes the numel() fp32 values to dst, decoded from the mapped file (which the
  // decoder keeps open) on every call.
  std::function<void(float* dst)> decode;

  bool lazy() const { return static_cast<bool>(decode); }
  // The values of an eagerly read tensor.
  float* f32() const {
    FARTHING_CHECK(!lazy(), "tensor of shape ", shape.str(), " was opened lazily; read() it into a buffer");
    return static_cast<float*>(data.data());
  }
  // The values into dst (numel() floats), however the tensor was opened.
  void read(float* dst) const;
  int64_t numel() const { return shape.numel(); }
  Tensor view() const { return Tensor(data.data(), DType::kF32, shape); }
};

// An fp32 host tensor of the given shape (zero-filled).
ModelTensor make_model_tensor(const Shape& shape);
// A tensor whose values `decode` writes from a mapped file: kept as the decoder when lazy (the
// values decoded on every read), else decoded once into an fp32 host buffer.
ModelTensor decoded_model_tensor(const Shape& shape, std::function<void(float* dst)> decode, bool lazy);
// Shape from a dims list; throws naming `what` when the rank exceeds kMaxRank or a dim is < 0.
Shape shape_from_dims(const std::vector<int64_t>& dims, const std::string& what);

struct ModelFile {
  std::string source;  // the file (or directory) it was read from
  std::string format;  // "safetensors", "gguf", "llama2c"
  nlohmann::json config = nlohmann::json::object();  // HF config.json fields
  std::map<std::string, ModelTensor> tensors;        // HF name -> tensor

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  // The tensor, or an Error naming the file and the missing tensor.
  const ModelTensor& at(const std::string& name) const;
  // The tensor, checked to have exactly `shape`.
  const ModelTensor& expect(const std::string& name, const Shape& shape) const;
  int64_t num_parameters() const;
};

}  // namespace farthing::ckpt

// safetensors.h — Hugging Face safetensors in and out.
//
// File layout: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32"|"F16"|"BF16", "shape": [...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {...}}
// then the data section (offsets are relative to its start). Reading checks every offset and
// shape against the file size, refuses a data section the tensors do not tile exactly (two
// tensors sharing bytes, or bytes before, between or after them that no tensor claims: the
// format's own rule, and the shapes polyglot files take), and converts to fp32. A model directory holds config.json and
// either model.safetensors or shards listed in model.safetensors.index.json ("weight_map").
// Writing puts tensors in name order, pads the header with spaces to 8 bytes (as the HF
// library does), and shards above max_shard_bytes as model-0000i-of-0000N.safetensors.
// Relies on: mapped_file.h, model_file.h, kernels/numerics casts.
// Tested by: tests/ckpt/test_safetensors.cpp, tests/ckpt/test_bad_files.cpp.
#pragma once

#include <cstdint>
#include <filesystem>

#include "framework/ckpt/model_file.h"
#include "framework/core/dtype.h"

namespace farthing::ckpt {

// path: a .safetensors file, a model.safetensors.index.json, or a directory holding either.
// config.json beside it (when present) becomes ModelFile::config. lazy: the tensors decode from
// the mapped files when read (ModelTensor::read), every header check done now.
ModelFile read_safetensors(const std::filesystem::path& path, bool lazy = false);

struct SafetensorsWriteOptions {
  uint64_t max_shard_bytes = uint64_t(5) << 30;  // HF's default "5GB" shards
  DType dtype = DType::kF32;                      // kF32, kBF16 (round to nearest even) or kF16
};

// Writes dir/config.json (model.config) and the tensors; creates dir if needed.
void write_safetensors(const std::filesystem::path& dir, const ModelFile& model,
                       const SafetensorsWriteOptions& options = {});

}  // namespace farthing::ckpt

// read_model.h — one entry point for every checkpoint format users bring: picks the reader by
// what the path is (a directory or *.safetensors / *.index.json: safetensors; *.gguf: GGUF;
// *.h5: a farthing training checkpoint; anything else: a llama2.c .bin) and returns its
// ModelFile (HF names, fp32, config).
// Relies on: safetensors.h, gguf_model.h, llama2c.h. Tested by: tests/ckpt/test_llama2c.cpp,
// tests/ckpt/test_gguf.cpp.
#pragma once

#include <filesystem>

#include "framework/ckpt/model_file.h"

namespace farthing::ckpt {

ModelFile read_model_file(const std::filesystem::path& path);
// The same file opened lazily: config and every check now, the tensors decoded from the mapped
// file when read (ModelTensor::read), so a trainer converts one unit at a time. A training
// checkpoint (HDF5) is read whole, as by read_model_file.
ModelFile open_model_file(const std::filesystem::path& path);

}  // namespace farthing::ckpt

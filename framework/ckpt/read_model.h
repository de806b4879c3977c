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

}  // namespace farthing::ckpt

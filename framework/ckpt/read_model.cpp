// read_model.cpp — see read_model.h.
#include "framework/ckpt/read_model.h"

#include "framework/ckpt/gguf_model.h"
#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "framework/ckpt/train_checkpoint_model.h"
#include "framework/core/error.h"

namespace farthing::ckpt {

namespace {

ModelFile read_any(const std::filesystem::path& path, bool lazy) {
  FARTHING_CHECK(std::filesystem::exists(path), "checkpoint ", path.string(), " does not exist");
  const std::string name = path.filename().string();
  if (std::filesystem::is_directory(path) || name.ends_with(".safetensors") || name.ends_with(".index.json")) {
    return read_safetensors(path, lazy);
  }
  if (name.ends_with(".gguf")) return read_gguf_model(path, lazy);
  if (is_training_checkpoint(path)) return read_training_checkpoint_model(path);
  return read_llama2c(path, lazy);
}

}  // namespace

ModelFile read_model_file(const std::filesystem::path& path) { return read_any(path, false); }

ModelFile open_model_file(const std::filesystem::path& path) { return read_any(path, true); }

}  // namespace farthing::ckpt

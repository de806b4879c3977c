// read_model.cpp — see read_model.h.
#include "framework/ckpt/read_model.h"

#include "framework/ckpt/gguf_model.h"
#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "framework/ckpt/train_checkpoint_model.h"
#include "framework/core/error.h"

namespace farthing::ckpt {

ModelFile read_model_file(const std::filesystem::path& path) {
  FARTHING_CHECK(std::filesystem::exists(path), "checkpoint ", path.string(), " does not exist");
  const std::string name = path.filename().string();
  if (std::filesystem::is_directory(path) || name.ends_with(".safetensors") || name.ends_with(".index.json")) {
    return read_safetensors(path);
  }
  if (name.ends_with(".gguf")) return read_gguf_model(path);
  if (is_training_checkpoint(path)) return read_training_checkpoint_model(path);
  return read_llama2c(path);
}

}  // namespace farthing::ckpt

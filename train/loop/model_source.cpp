// model_source.cpp — see model_source.h.
#include "train/loop/model_source.h"

#include <filesystem>

#include "framework/ckpt/read_model.h"
#include "framework/core/error.h"
#include "framework/data/tokenizer_loaders.h"
#include "models/common/presets.h"
#include "models/common/weights_from_file.h"

namespace farthing::train {

namespace fs = std::filesystem;

namespace {

// The tokenizer that travels with a weights file, if any.
std::optional<fs::path> tokenizer_beside(const fs::path& weights) {
  if (weights.extension() == ".gguf") return weights;
  const fs::path dir = fs::is_directory(weights) ? weights : weights.parent_path();
  if (fs::exists(dir / "tokenizer.json")) return dir / "tokenizer.json";
  return std::nullopt;
}

}  // namespace

ModelSource open_model_source(const recipe::ModelSection& model, bool need_tokenizer) {
  ModelSource source;
  if (!model.path.empty()) {
    FARTHING_CHECK(fs::exists(model.path), "model.path '", model.path,
                   "' does not exist; point it at an HF model directory, a .safetensors, .gguf or llama2.c .bin file");
    source.file = ckpt::open_model_file(model.path);  // tensors decoded unit by unit when training starts
    source.config = models::model_config_from_file(*source.file);
  } else {
    FARTHING_CHECK(!model.preset.empty(), "the recipe names no model: set model.preset or model.path");
    source.config = models::preset_config(model.preset);
  }
  std::optional<fs::path> tokenizer_path;
  if (!model.tokenizer.empty()) {
    FARTHING_CHECK(fs::exists(model.tokenizer), "model.tokenizer '", model.tokenizer, "' does not exist");
    tokenizer_path = fs::path(model.tokenizer);
  } else if (!model.path.empty()) {
    tokenizer_path = tokenizer_beside(model.path);
  }
  if (tokenizer_path) {
    // NOTE: a Tokenizer cannot move (it owns a mutex); `new` initialises it from the loader's
    // prvalue in place, which make_unique's forwarding cannot.
    source.tokenizer.reset(new data::Tokenizer(data::load_tokenizer(*tokenizer_path)));
  }
  FARTHING_CHECK(source.tokenizer || !need_tokenizer, "the data needs a tokenizer but none is known for model '",
                 model.path.empty() ? model.preset : model.path,
                 "'; set model.tokenizer to a tokenizer.json, tok512.bin or .gguf");
  return source;
}

}  // namespace farthing::train

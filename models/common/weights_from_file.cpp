// weights_from_file.cpp — see weights_from_file.h.
#include "models/common/weights_from_file.h"

#include <algorithm>
#include <filesystem>

namespace farthing::models {

ModelConfig model_config_from_file(const ckpt::ModelFile& file) {
  return config_from_hf_json(file.config.dump(), std::filesystem::path(file.source).filename().string());
}

void copy_weights_from_file(const ckpt::ModelFile& file, const FlatLayout& layout, float* flat_params) {
  std::fill(flat_params, flat_params + layout.total_elems(), 0.0f);
  for (const ParamEntry& entry : layout.entries()) {
    const ckpt::ModelTensor& t = file.expect(entry.name, entry.shape);
    std::copy(t.f32(), t.f32() + entry.numel(), flat_params + entry.offset_elems);
  }
}

}  // namespace farthing::models

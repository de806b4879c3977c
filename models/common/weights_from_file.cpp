// weights_from_file.cpp — see weights_from_file.h.
#include "models/common/weights_from_file.h"

#include <algorithm>
#include <filesystem>

namespace farthing::models {

ModelConfig model_config_from_file(const ckpt::ModelFile& file) {
  return config_from_hf_json(file.config.dump(), std::filesystem::path(file.source).filename().string());
}

void copy_weights_from_file(const ckpt::ModelFile& file, const FlatLayout& layout, float* flat_params) {
  check_weights_in_file(file, layout);
  copy_weights_range_from_file(file, layout, 0, layout.total_elems(), flat_params);
}

void check_weights_in_file(const ckpt::ModelFile& file, const FlatLayout& layout) {
  for (const ParamEntry& entry : layout.entries()) file.expect(entry.name, entry.shape);
}

void copy_weights_range_from_file(const ckpt::ModelFile& file, const FlatLayout& layout, int64_t begin, int64_t end,
                                  float* p) {
  std::fill(p, p + (end - begin), 0.0f);  // alignment gaps
  for (const ParamEntry& entry : layout.entries()) {
    if (entry.offset_elems < begin || entry.offset_elems >= end) continue;
    FARTHING_CHECK(entry.offset_elems + entry.numel() <= end, "tensor '", entry.name, "' runs past element ", end,
                   " of the range being read");
    file.expect(entry.name, entry.shape).read(p + (entry.offset_elems - begin));
  }
}

}  // namespace farthing::models

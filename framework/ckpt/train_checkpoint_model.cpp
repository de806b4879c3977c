// train_checkpoint_model.cpp — see train_checkpoint_model.h.
#include "framework/ckpt/train_checkpoint_model.h"

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/core/error.h"

namespace farthing::ckpt {

namespace {

constexpr const char* kModelPrefix = "model/";

std::vector<std::string> split_plus(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t plus = text.find('+'); plus != std::string::npos; plus = text.find('+', start)) {
    parts.push_back(text.substr(start, plus - start));
    start = plus + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace

bool is_training_checkpoint(const std::filesystem::path& path) { return path.extension() == ".h5"; }

ModelFile read_training_checkpoint_model(const std::filesystem::path& path, CheckpointWeights weights) {
  H5CheckpointReader reader(path);
  reader.verify();
  ModelFile file;
  file.source = path.string();
  file.format = "farthing-h5";
  file.config = nlohmann::json::parse(reader.read_string("model_config"));
  for (const H5TensorInfo& info : reader.tensors()) {
    if (!info.name.starts_with(kModelPrefix)) continue;
    FARTHING_CHECK(info.dtype == DType::kBF16, "checkpoint ", path.string(), ": '", info.name, "' is ",
                   dtype_name(info.dtype), ", expected bf16 weights");
    ModelTensor t = make_model_tensor(info.shape);
    std::vector<uint16_t> bits(size_t(info.numel));
    reader.read_slice(info.name, 0, Tensor(bits.data(), DType::kBF16, Shape{info.numel}));
    backend_for(Device::cpu())
        .cast(Tensor(t.f32(), DType::kF32, Shape{info.numel}), Tensor(bits.data(), DType::kBF16, Shape{info.numel}),
              CastOptions{});  // widening: exact
    file.tensors.emplace(info.name.substr(std::string(kModelPrefix).size()), std::move(t));
  }
  FARTHING_CHECK(!file.tensors.empty(), "checkpoint ", path.string(), " holds no model/ tensors");
  if (weights == CheckpointWeights::kWorking) return file;
  // A range's master holds its tensors (those its name joins with '+', packed back to back) in order.
  for (const H5TensorInfo& info : reader.tensors()) {
    constexpr std::string_view kSuffix = "/master";
    if (!info.name.starts_with("optim/") || !info.name.ends_with(kSuffix)) continue;
    const std::string range = info.name.substr(6, info.name.size() - 6 - kSuffix.size());
    int64_t offset = 0;
    for (const std::string& tensor : split_plus(range)) {
      ModelTensor& t = file.tensors.at(tensor);
      reader.read_slice(info.name, offset, Tensor(t.f32(), DType::kF32, Shape{t.numel()}));
      offset += t.numel();
    }
    FARTHING_CHECK(offset == info.numel, "checkpoint ", path.string(), ": '", info.name, "' holds ", info.numel,
                   " values but its tensors have ", offset);
  }
  return file;
}

}  // namespace farthing::ckpt

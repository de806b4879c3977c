// model_file.cpp — see model_file.h.
#include "framework/ckpt/model_file.h"

#include <cstring>
#include <utility>

namespace farthing::ckpt {

ModelTensor make_model_tensor(const Shape& shape) {
  ModelTensor t;
  t.shape = shape;
  t.data = Buffer(Device::cpu(), size_t(shape.numel()) * sizeof(float), MemoryCategory::kWeights);
  if (t.data.data()) std::memset(t.data.data(), 0, t.data.bytes());
  return t;
}

ModelTensor decoded_model_tensor(const Shape& shape, std::function<void(float* dst)> decode, bool lazy) {
  if (!lazy) {
    ModelTensor t = make_model_tensor(shape);
    decode(t.f32());
    return t;
  }
  ModelTensor t;
  t.shape = shape;
  t.decode = std::move(decode);
  return t;
}

void ModelTensor::read(float* dst) const {
  if (lazy()) {
    decode(dst);
  } else if (numel() > 0) {
    std::memcpy(dst, data.data(), size_t(numel()) * sizeof(float));
  }
}

Shape shape_from_dims(const std::vector<int64_t>& dims, const std::string& what) {
  FARTHING_CHECK(dims.size() <= size_t(kMaxRank), what, " has rank ", dims.size(),
                 " but at most ", kMaxRank, " is supported");
  Shape shape;
  shape.rank = int(dims.size());
  int64_t elements = 1;
  bool overflow = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    FARTHING_CHECK(dims[i] >= 0, what, " has a negative dimension ", dims[i]);
    shape.dims[i] = dims[i];
    overflow = overflow || __builtin_mul_overflow(elements, dims[i], &elements);
  }
  // NOTE: 2^48 elements (a petabyte of fp32) is past any real tensor, and keeps every byte count
  // derived from it (elements × 8 at most) inside 64 bits.
  FARTHING_CHECK(!overflow && elements < (int64_t(1) << 48), what, " has shape ", shape.str(), ", whose element count ",
                 overflow ? std::string("overflows 64 bits") : std::to_string(elements) + " exceeds 2^48",
                 ": not a tensor this reader accepts");
  return shape;
}

const ModelTensor& ModelFile::at(const std::string& name) const {
  auto it = tensors.find(name);
  FARTHING_CHECK(it != tensors.end(), "tensor '", name, "' is missing from ", source, " (", format,
                 ", ", tensors.size(), " tensors)");
  return it->second;
}

const ModelTensor& ModelFile::expect(const std::string& name, const Shape& shape) const {
  const ModelTensor& t = at(name);
  FARTHING_CHECK(t.shape == shape, "tensor '", name, "' in ", source, " has shape ", t.shape.str(),
                 " but ", shape.str(), " was expected");
  return t;
}

int64_t ModelFile::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors) n += t.numel();
  return n;
}

}  // namespace farthing::ckpt

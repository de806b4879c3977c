// test_safetensors.cpp — HF safetensors export and import: write -> read gives the same
// values and config, and writing what was read reproduces every file byte for byte; sharding
// above a size limit writes model.safetensors.index.json and reads back the same; BF16/F16
// export stores the round-to-nearest-even values; stories260K survives the trip.
// Relies on: ../shared/models/stories260K (one test). Tests: ckpt/safetensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "kernels/numerics/bf16.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing;
using namespace farthing::ckpt;
namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("farthing_test_safetensors_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

ModelFile synthetic_model() {
  ModelFile m;
  m.source = "synthetic";
  m.config = {{"model_type", "llama"}, {"hidden_size", 16}, {"rope_theta", 10000.0}};
  test::SplitMix64 rng(11);
  const std::vector<std::pair<std::string, Shape>> specs = {
      {"model.embed_tokens.weight", {40, 16}}, {"model.norm.weight", {16}},
      {"model.layers.0.self_attn.q_proj.weight", {16, 16}}, {"odd.shape", {3, 5, 7}}, {"scalar", {}}};
  for (const auto& [name, shape] : specs) {
    ModelTensor t = make_model_tensor(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float(rng.normal());
    m.tensors.emplace(name, std::move(t));
  }
  m.tensors.at("odd.shape").f32()[3] = -0.0f;
  m.tensors.at("odd.shape").f32()[4] = 1e-40f;  // subnormal
  return m;
}

void expect_same_tensors(const ModelFile& a, const ModelFile& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    const ModelTensor& u = b.at(name);
    ASSERT_EQ(t.shape, u.shape) << name;
    ASSERT_EQ(std::memcmp(t.f32(), u.f32(), size_t(t.numel()) * 4), 0) << name;
  }
}

std::vector<uint8_t> bytes_of(const fs::path& p) { return test::read_file_bytes(p); }

TEST(Safetensors, WriteReadRoundTripIsByteIdentical) {
  const fs::path a = temp_dir("a"), b = temp_dir("b");
  const ModelFile m = synthetic_model();
  write_safetensors(a, m);
  ASSERT_TRUE(fs::exists(a / "model.safetensors"));
  ASSERT_FALSE(fs::exists(a / "model.safetensors.index.json"));
  const ModelFile r = read_safetensors(a);
  EXPECT_EQ(r.config, m.config);
  expect_same_tensors(m, r);
  write_safetensors(b, r);
  EXPECT_EQ(bytes_of(a / "model.safetensors"), bytes_of(b / "model.safetensors"));
  EXPECT_EQ(bytes_of(a / "config.json"), bytes_of(b / "config.json"));
  // The header length is a multiple of 8 and the header is JSON with F32 entries.
  const std::vector<uint8_t> file = bytes_of(a / "model.safetensors");
  uint64_t n;
  std::memcpy(&n, file.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  const auto header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(n));
  EXPECT_EQ(header["odd.shape"]["dtype"], "F32");
  EXPECT_EQ(header["odd.shape"]["shape"], nlohmann::json({3, 5, 7}));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(Safetensors, ShardsAboveTheLimitWithAnIndex) {
  const fs::path a = temp_dir("shards"), b = temp_dir("shards_b");
  const ModelFile m = synthetic_model();
  SafetensorsWriteOptions opts;
  opts.max_shard_bytes = 1100;  // embed (2560 B) alone; q_proj (1024 B) alone; the rest together
  write_safetensors(a, m, opts);
  ASSERT_TRUE(fs::exists(a / "model.safetensors.index.json"));
  ASSERT_FALSE(fs::exists(a / "model.safetensors"));
  const auto index = nlohmann::json::parse(bytes_of(a / "model.safetensors.index.json"));
  EXPECT_EQ(index["weight_map"].size(), m.tensors.size());
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-00003.safetensors");
  EXPECT_EQ(index["metadata"]["total_size"], (40 * 16 + 16 + 256 + 105 + 1) * 4);
  const ModelFile r = read_safetensors(a / "model.safetensors.index.json");
  expect_same_tensors(m, r);
  expect_same_tensors(m, read_safetensors(a));
  write_safetensors(b, r, opts);
  for (const auto& entry : fs::directory_iterator(a)) {
    EXPECT_EQ(bytes_of(entry.path()), bytes_of(b / entry.path().filename())) << entry.path();
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(Safetensors, Bf16AndF16ExportRoundToNearestEven) {
  const ModelFile m = synthetic_model();
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const fs::path a = temp_dir("narrow");
    SafetensorsWriteOptions opts;
    opts.dtype = dtype;
    write_safetensors(a, m, opts);
    const ModelFile r = read_safetensors(a / "model.safetensors");
    const ModelTensor& src = m.at("model.embed_tokens.weight");
    const ModelTensor& got = r.at("model.embed_tokens.weight");
    for (int64_t i = 0; i < src.numel(); ++i) {
      const float x = src.f32()[i];
      if (dtype == DType::kBF16) {
        ASSERT_EQ(got.f32()[i], numerics::bf16_to_f32(numerics::f32_to_bf16_rne(x))) << i;
      } else {
        ASSERT_NEAR(got.f32()[i], x, std::fabs(x) * 1e-3f + 1e-7f) << i;
      }
    }
    fs::remove_all(a);
  }
}

TEST(Safetensors, Stories260KSurvivesExport) {
  FARTHING_REQUIRE_SHARED(shared);
  const ModelFile m = read_llama2c(shared / "models/stories260K/stories260K.bin");
  const fs::path a = temp_dir("stories");
  write_safetensors(a, m);
  const ModelFile r = read_safetensors(a);
  expect_same_tensors(m, r);
  EXPECT_EQ(r.config, m.config);
  EXPECT_EQ(r.num_parameters(), 260032);
  fs::remove_all(a);
}

}  // namespace

// test_bad_files.cpp — broken checkpoints fail with a farthing::Error that names the file,
// the tensor and what was expected: truncated files (safetensors, GGUF header and data,
// llama2.c), safetensors data the tensors do not tile (shared bytes, gaps, trailing bytes),
// wrong magic, a shape that disagrees with the data, an unknown quant type, an unsupported dtype,
// a missing tensor (ModelFile::at and a sharded index naming a tensor its shard lacks), and a
// shape the model did not expect (ModelFile::expect).
// Relies on: tests/support/gguf_builder.h, ../shared (llama2.c case). Tests: ckpt readers.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/ckpt/gguf_model.h"
#include "framework/ckpt/llama2c.h"
#include "framework/ckpt/safetensors.h"
#include "tests/support/gguf_builder.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing;
using namespace farthing::ckpt;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("farthing_bad_" + std::to_string(::getpid()) + "_" + name);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_bytes(const fs::path& p) {
  const auto v = test::read_file_bytes(p);
  return std::string(v.begin(), v.end());
}

// Runs fn, which must throw farthing::Error whose message contains every needle.
template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error was thrown";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

std::string safetensors_bytes(const nlohmann::json& header, const std::string& data) {
  std::string text = header.dump();
  const uint64_t n = text.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + text + data;
}

ModelFile small_model() {
  ModelFile m;
  m.source = "small";
  for (const char* name : {"a.weight", "b.weight"}) {
    ModelTensor t = make_model_tensor({4, 4});
    for (int i = 0; i < 16; ++i) t.f32()[i] = float(i);
    m.tensors.emplace(name, std::move(t));
  }
  return m;
}

TEST(BadFiles, SafetensorsTruncated) {
  const fs::path dir = temp_path("st_trunc");
  write_safetensors(dir, small_model());
  const fs::path file = dir / "model.safetensors";
  const std::string bytes = read_bytes(file);
  write_bytes(file, bytes.substr(0, bytes.size() - 10));
  expect_error([&] { read_safetensors(file); }, {file.string(), "truncated", "b.weight", "data bytes [64, 128)"});
  write_bytes(file, bytes.substr(0, 20));  // cut inside the header
  expect_error([&] { read_safetensors(file); }, {file.string(), "truncated"});
  fs::remove_all(dir);
}

TEST(BadFiles, SafetensorsShapeDisagreesWithData) {
  const fs::path file = temp_path("st_shape.safetensors");
  const nlohmann::json header = {{"w", {{"dtype", "F32"}, {"shape", {4, 4}}, {"data_offsets", {0, 48}}}}};
  write_bytes(file, safetensors_bytes(header, std::string(48, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'w'", "(4, 4)", "needs 64 bytes", "span 48"});
  fs::remove(file);
}

// A shape whose element count wraps to 0 in 64 bits once passed as a tensor of no elements.
TEST(BadFiles, SafetensorsShapeOverflowingSixtyFourBits) {
  const fs::path file = temp_path("overflow.safetensors");
  const nlohmann::json header = {
      {"w", {{"dtype", "F32"}, {"shape", {int64_t(1) << 32, int64_t(1) << 32}}, {"data_offsets", {0, 0}}}}};
  write_bytes(file, safetensors_bytes(header, ""));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'w'", "overflows 64 bits"});
  expect_error([&] { read_safetensors(file, /*lazy=*/true); }, {file.string(), "'w'", "overflows 64 bits"});
  fs::remove(file);
}

// The data section must be tiled by the tensors exactly (the format's own validator's rule):
// shared bytes, and bytes no tensor claims, are the shapes polyglot and confused-deputy files take.
nlohmann::json two_f32_tensors(uint64_t a_begin, uint64_t a_end, uint64_t b_begin, uint64_t b_end) {
  return {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {a_begin, a_end}}}},
          {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {b_begin, b_end}}}}};
}

TEST(BadFiles, SafetensorsTensorsSharingBytes) {
  const fs::path file = temp_path("st_overlap.safetensors");
  write_bytes(file, safetensors_bytes(two_f32_tensors(0, 8, 4, 12), std::string(12, '\0')));
  for (const bool lazy : {false, true}) {
    expect_error([&] { read_safetensors(file, lazy); },
                 {file.string(), "'a' (data bytes [0, 8))", "'b' ([4, 12))", "overlap"});
  }
  // The same range twice, and a tensor inside another, overlap just as well.
  write_bytes(file, safetensors_bytes(two_f32_tensors(0, 8, 0, 8), std::string(8, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'a'", "'b'", "overlap"});
  fs::remove(file);
}

TEST(BadFiles, SafetensorsBytesBetweenOrBeforeTensors) {
  const fs::path file = temp_path("st_gap.safetensors");
  write_bytes(file, safetensors_bytes(two_f32_tensors(0, 8, 12, 20), std::string(20, '\0')));
  for (const bool lazy : {false, true}) {
    expect_error([&] { read_safetensors(file, lazy); },
                 {file.string(), "data bytes [8, 12)", "between tensor 'a' and tensor 'b'", "belong to no tensor"});
  }
  write_bytes(file, safetensors_bytes(two_f32_tensors(4, 12, 12, 20), std::string(20, '\0')));
  expect_error([&] { read_safetensors(file); },
               {file.string(), "data bytes [0, 4)", "before tensor 'a'", "belong to no tensor"});
  fs::remove(file);
}

TEST(BadFiles, SafetensorsTrailingBytesAfterTheLastTensor) {
  const fs::path file = temp_path("st_trailing.safetensors");
  write_bytes(file, safetensors_bytes(two_f32_tensors(0, 8, 8, 16), std::string(20, '\0')));
  for (const bool lazy : {false, true}) {
    expect_error([&] { read_safetensors(file, lazy); },
                 {file.string(), "data bytes [16, 20)", "after the last tensor 'b'", "belong to no tensor"});
  }
  write_bytes(file, safetensors_bytes(nlohmann::json::object(), std::string(4, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "data bytes [0, 4)", "no tensor"});
  fs::remove(file);
}

// The control: an exact tiling is read, in any header order, empty tensors included (they take no bytes).
TEST(BadFiles, SafetensorsExactTilingIsAccepted) {
  const fs::path file = temp_path("st_tiled.safetensors");
  nlohmann::json header = two_f32_tensors(8, 16, 0, 8);
  header["empty"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {8, 8}}};
  header["last_empty"] = {{"dtype", "BF16"}, {"shape", {0, 3}}, {"data_offsets", {16, 16}}};
  write_bytes(file, safetensors_bytes(header, std::string(16, '\0')));
  const ModelFile m = read_safetensors(file);
  EXPECT_EQ(m.tensors.size(), 4u);
  fs::remove(file);
}

TEST(BadFiles, SafetensorsUnsupportedDtypeAndBadMagic) {
  const fs::path file = temp_path("st_dtype.safetensors");
  const nlohmann::json header = {{"ids", {{"dtype", "I64"}, {"shape", {2}}, {"data_offsets", {0, 16}}}}};
  write_bytes(file, safetensors_bytes(header, std::string(16, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'ids'", "I64", "expected F32, F16 or BF16"});
  const nlohmann::json negative = {{"w", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {-8, 8}}}}};
  write_bytes(file, safetensors_bytes(negative, std::string(8, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'w'", "bad data_offsets"});
  const nlohmann::json wrong_type = {{"w", {{"dtype", "F32"}, {"shape", "two"}, {"data_offsets", {0, 8}}}}};
  write_bytes(file, safetensors_bytes(wrong_type, std::string(8, '\0')));
  expect_error([&] { read_safetensors(file); }, {file.string(), "'w'", "malformed"});
  write_bytes(file, std::string("\x10\0\0\0\0\0\0\0not json at all!", 24));
  expect_error([&] { read_safetensors(file); }, {file.string(), "not a safetensors file"});
  fs::remove(file);
}

TEST(BadFiles, MissingTensor) {
  const ModelFile m = small_model();
  expect_error([&] { m.at("c.weight"); }, {"'c.weight'", "missing", "small"});
  // A sharded index that lists a tensor its shard does not hold.
  const fs::path dir = temp_path("st_missing");
  SafetensorsWriteOptions opts;
  opts.max_shard_bytes = 64;
  write_safetensors(dir, m, opts);
  auto index = nlohmann::json::parse(read_bytes(dir / "model.safetensors.index.json"));
  index["weight_map"]["c.weight"] = "model-00002-of-00002.safetensors";
  write_bytes(dir / "model.safetensors.index.json", index.dump());
  expect_error([&] { read_safetensors(dir); },
               {"'c.weight'", "model.safetensors.index.json", "model-00002-of-00002.safetensors", "missing"});
  fs::remove_all(dir);
}

TEST(BadFiles, ShapeTheModelDidNotExpect) {
  const ModelFile m = small_model();
  expect_error([&] { m.expect("a.weight", {4, 8}); }, {"'a.weight'", "small", "(4, 4)", "(4, 8)"});
}

test::GgufBuilder tiny_gguf(uint32_t type, const std::string& data) {
  test::GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.attention.head_count", 1);
  b.add_tensor("blk.0.ffn_up.weight", {32, 2}, type, data);
  return b;
}

TEST(BadFiles, GgufWrongMagicAndVersion) {
  const fs::path file = temp_path("magic.gguf");
  std::string bytes = tiny_gguf(0, std::string(256, '\0')).build();
  bytes[0] = 'X';
  write_bytes(file, bytes);
  expect_error([&] { read_gguf_model(file); }, {file.string(), "not a GGUF file"});
  bytes[0] = 'G';
  bytes[4] = 1;  // version 1
  write_bytes(file, bytes);
  expect_error([&] { read_gguf_model(file); }, {file.string(), "version 1", "2 and 3"});
  fs::remove(file);
}

TEST(BadFiles, GgufTruncated) {
  const fs::path file = temp_path("trunc.gguf");
  const std::string bytes = tiny_gguf(0, std::string(256, '\0')).build();
  write_bytes(file, bytes.substr(0, bytes.size() - 4));
  expect_error([&] { read_gguf_model(file); }, {file.string(), "truncated", "blk.0.ffn_up.weight", "F32"});
  write_bytes(file, bytes.substr(0, 40));  // inside the metadata
  expect_error([&] { read_gguf_model(file); }, {file.string(), "truncated"});
  fs::remove(file);
}

TEST(BadFiles, GgufUnknownQuantType) {
  const fs::path file = temp_path("q6k.gguf");
  tiny_gguf(14, std::string(420, '\0')).write(file);  // Q6_K
  expect_error([&] { read_gguf_model(file); }, {file.string(), "blk.0.ffn_up.weight", "Q6_K", "not supported", "Q4_1"});
  tiny_gguf(99, std::string(64, '\0')).write(file);  // not a ggml type at all
  expect_error([&] { read_gguf_model(file); }, {file.string(), "blk.0.ffn_up.weight", "type 99"});
  fs::remove(file);
}

TEST(BadFiles, Llama2cTruncatedAndNotAModel) {
  FARTHING_REQUIRE_SHARED(shared);
  const std::string bytes = read_bytes(shared / "models/stories260K/stories260K.bin");
  const fs::path file = temp_path("stories.bin");
  write_bytes(file, bytes.substr(0, 28 + 4 * (512 * 64 + 5 * 64 + 1000)));  // ends inside wq
  expect_error([&] { read_llama2c(file); }, {file.string(), "truncated", "wq"});
  // sizeof - 1: the literal's own length (embedded NULs included); a hand-counted 40 read past
  // its end (ASan global-buffer-overflow in the sanitizer build).
  static const char kNotLlama2c[] = "GGUF\x03\0\0\0 this is not llama2.c at all";
  write_bytes(file, std::string(kNotLlama2c, sizeof(kNotLlama2c) - 1));
  expect_error([&] { read_llama2c(file); }, {file.string(), "not a llama2.c checkpoint"});
  fs::remove(file);
}

}  // namespace

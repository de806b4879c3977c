// test_checked_sizes.cpp — sizes and offsets a model file declares are checked before they are
// trusted: checked_math.h's helpers, and per reader the classes of fix the fuzz
// targets (tests/fuzz) drove: a GGUF tensor offset that wraps past 2^64 back into (or before) the
// file, an unsupported-type tensor declaring more elements than the file could hold, arrays of
// arrays nested past the limit, an alignment past 2^30, a u64 metadata value past
// int64, a layer number past int, a head count whose 2*heads overflows. Each must be a farthing::Error naming the file and the field.
// Relies on: framework/core/checked_math.h, framework/ckpt. Tests: ckpt readers.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/gguf_model.h"
#include "framework/core/checked_math.h"

namespace {

using namespace farthing;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("farthing_checked_" + std::to_string(::getpid()) + "_" + name);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

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

template <class T>
void pod(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void str(std::string& out, const std::string& s) {
  pod(out, uint64_t(s.size()));
  out += s;
}

// A GGUF v3 file: kv is the encoded metadata (n_kv entries); one F32 tensor `name` of dims with
// the given offset (not necessarily a sane one); 32-byte alignment; data_bytes of data.
std::string gguf(const std::string& kv, uint64_t n_kv, const std::string& name, std::vector<uint64_t> dims,
                 uint64_t offset, size_t data_bytes, uint32_t type = 0) {
  std::string out = "GGUF";
  pod(out, uint32_t(3));
  pod(out, uint64_t(1));
  pod(out, n_kv);
  out += kv;
  str(out, name);
  pod(out, uint32_t(dims.size()));
  for (uint64_t d : dims) pod(out, d);
  pod(out, type);
  pod(out, offset);
  while (out.size() % 32) out += '\0';
  out += std::string(data_bytes, '\x01');
  return out;
}
std::string kv_string(const std::string& key, const std::string& v) {
  std::string out;
  str(out, key);
  pod(out, uint32_t(8));
  str(out, v);
  return out;
}
template <class T>
std::string kv_pod(const std::string& key, uint32_t type, T v) {
  std::string out;
  str(out, key);
  pod(out, type);
  pod(out, v);
  return out;
}

TEST(CheckedMath, OverflowIsAnErrorNamingTheField) {
  EXPECT_EQ(checked_mul(uint64_t(1) << 31, uint64_t(1) << 32, "x"), uint64_t(1) << 63);
  EXPECT_EQ(checked_add(UINT64_MAX - 1, 1, "x"), UINT64_MAX);
  expect_error([] { checked_mul(uint64_t(1) << 32, uint64_t(1) << 32, "file f: the token count"); },
               {"file f: the token count", "overflows 64 bits"});
  expect_error([] { checked_add(UINT64_MAX, 1, "tensor 't'"); }, {"tensor 't'", "overflows 64 bits"});
  EXPECT_EQ(checked_product({3, 5, 7}, 1000, "s"), 105);
  expect_error([] { checked_product({int64_t(1) << 40, int64_t(1) << 40}, INT64_MAX, "shape s"); },
               {"shape s", "multiply past"});
  expect_error([] { checked_product({4, -1}, 1000, "shape s"); }, {"shape s", "negative size -1"});
  check_range(8, 8, 16, "r");
  expect_error([] { check_range(UINT64_MAX - 4, 8, 16, "tensor 'w'"); }, {"tensor 'w'", "16 bytes"});
  expect_error([] { check_range(9, 8, 16, "tensor 'w'"); }, {"tensor 'w'", "needs bytes [9"});
  expect_error([] { check_depth(17, 16, "pre_tokenizer"); }, {"pre_tokenizer", "deeper than 16"});
}

TEST(CheckedSizes, GgufTensorOffsetWrappingPastSixtyFourBits) {
  // offset + bytes wraps: begin lies 1 MiB before the data section (before the mapping) and the
  // end inside the file. The unchecked sum passed the bounds check and read before the file.
  const fs::path file = temp_path("wrap.gguf");
  const uint64_t offset = ~uint64_t(0) - (uint64_t(1) << 20) + 1;  // -2^20: a multiple of 32
  write_bytes(file, gguf(kv_string("general.architecture", "llama"), 1, "output.weight", {(1u << 18) + 16}, offset, 64));
  expect_error([&] { ckpt::GgufFile g(file); }, {file.string(), "output.weight", "overflows 64 bits"});
  fs::remove(file);
}

TEST(CheckedSizes, GgufUnsupportedTypeDeclaringMoreElementsThanTheFileHolds) {
  // A Q6_K tensor (unsupported: its bytes were never checked) of 2^40 elements in a 1 KiB file:
  // read_gguf_model sized a 4 TiB fp32 buffer by it before dequantize said "not supported".
  const fs::path file = temp_path("q6k_huge.gguf");
  write_bytes(file, gguf(kv_string("general.architecture", "llama"), 1, "output.weight", {uint64_t(1) << 20, uint64_t(1) << 20}, 0,
                         1024, 14));
  expect_error([&] { ckpt::read_gguf_model(file); }, {file.string(), "output.weight", "Q6_K", "1099511627776 elements"});
  fs::remove(file);
}

TEST(CheckedSizes, GgufArraysNestedPastTheLimit) {
  // 20 arrays of arrays: the reader recursed once per level with no bound (a file of nested
  // one-element arrays exhausted the stack).
  const fs::path file = temp_path("nested.gguf");
  std::string kv;
  str(kv, "deep");
  pod(kv, uint32_t(9));
  for (int i = 0; i < 20; ++i) {
    pod(kv, uint32_t(9));
    pod(kv, uint64_t(1));
  }
  pod(kv, uint32_t(4));
  pod(kv, uint64_t(1));
  pod(kv, uint32_t(7));
  write_bytes(file, gguf(kv, 1, "t", {8}, 0, 32));
  expect_error([&] { ckpt::GgufFile g(file); }, {file.string(), "'deep'", "deeper than 8"});
  fs::remove(file);
}

TEST(CheckedSizes, GgufAlignmentAndUnsignedMetadataOutOfRange) {
  const fs::path file = temp_path("align.gguf");
  write_bytes(file, gguf(kv_pod("general.alignment", 10, uint64_t(1) << 40), 1, "t", {8}, 0, 32));
  expect_error([&] { ckpt::GgufFile g(file); }, {file.string(), "general.alignment", "1 to 2^30"});
  write_bytes(file, gguf(kv_pod("general.alignment", 10, uint64_t(1) << 63), 1, "t", {8}, 0, 32));
  expect_error([&] { ckpt::GgufFile g(file); }, {file.string(), "general.alignment", "past the largest signed"});
  fs::remove(file);
}

TEST(CheckedSizes, GgufLayerNumberAndHeadCountOutOfRange) {
  const fs::path file = temp_path("heads.gguf");
  const std::string arch = kv_string("general.architecture", "llama");
  // blk.<11 digits>: std::stoi threw std::out_of_range, a message naming neither file nor tensor.
  write_bytes(file, gguf(arch, 1, "blk.99999999999.ffn_up.weight", {8}, 0, 32));
  expect_error([&] { ckpt::read_gguf_model(file); }, {"blk.99999999999.ffn_up.weight", "below 10^6"});
  // head_count 2^62: 2 * heads overflowed int64 (UB) in the rows check.
  write_bytes(file, gguf(arch + kv_pod("llama.attention.head_count", 10, uint64_t(1) << 62), 2,
                         "blk.0.attn_q.weight", {8, 4}, 0, 128));
  expect_error([&] { ckpt::read_gguf_model(file); }, {file.string(), "blk.0.attn_q.weight", "rows was expected"});
  fs::remove(file);
}

}  // namespace

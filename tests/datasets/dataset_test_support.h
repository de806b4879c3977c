// dataset_test_support.h — what the dataset tests share: a byte tokenizer whose ids are the
// bytes themselves (so expected tokens are written as characters), a temporary folder, file
// writers, and a check that an Error's message names everything it should.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/packing.h"
#include "framework/data/tokenizer.h"
#include "framework/data/utf8.h"

namespace farthing::test {

inline constexpr int32_t kByteBos = 256, kByteEos = 257, kByteImStart = 258, kByteImEnd = 259;

// Byte-level, no merges: byte b is token b; "<s>" 256 (BOS), "</s>" 257 (EOS), and ChatML's
// "<|im_start|>" 258 and "<|im_end|>" 259 as special tokens.
inline data::TokenizerSpec byte_tokenizer_spec(const std::string& source = "byte-tokenizer") {
  data::TokenizerSpec spec;
  spec.kind = data::TokenizerKind::kByteLevel;
  spec.source = source;
  for (int b = 0; b < 256; ++b) spec.pieces.push_back(data::byte_level_char(uint8_t(b)));
  spec.pieces.insert(spec.pieces.end(), {"<s>", "</s>", "<|im_start|>", "<|im_end|>"});
  spec.scores.assign(spec.pieces.size(), 0.0f);
  spec.added_tokens = {{"<s>", kByteBos}, {"</s>", kByteEos}, {"<|im_start|>", kByteImStart}, {"<|im_end|>", kByteImEnd}};
  spec.bos_id = kByteBos;
  spec.eos_id = kByteEos;
  return spec;
}

inline std::vector<int32_t> byte_ids(const std::string& text) {
  std::vector<int32_t> ids;
  for (unsigned char c : text) ids.push_back(int32_t(c));
  return ids;
}

// A fresh folder under the system temp dir, removed with everything in it at the end of scope.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() /
            (name + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& file) const { return path_ / file; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return path;
}

// Runs fn, which must throw farthing::Error whose message contains every one of parts.
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a farthing::Error naming: " << ::testing::PrintToString(std::vector<std::string>(parts));
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "the message lacks '" << part << "':\n" << message;
    }
  }
}

struct Sequence {
  std::vector<int32_t> tokens, targets;
};
inline Sequence sequence_of(const data::PackedDataset& dataset, int64_t index) {
  Sequence s{std::vector<int32_t>(size_t(dataset.seq_len())), std::vector<int32_t>(size_t(dataset.seq_len()))};
  dataset.sequence(index, s.tokens.data(), s.targets.data());
  return s;
}

}  // namespace farthing::test

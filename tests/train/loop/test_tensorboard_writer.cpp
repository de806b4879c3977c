// test_tensorboard_writer.cpp — the TensorBoard event encoder (train/loop/tensorboard_writer.h)
// byte for byte against records written by TensorBoard's own protobuf classes and RecordWriter,
// CRC32C against published vectors, and MetricsLog's event files (one per run, resume after).
// TensorBoard's reader on a real run: tools/goldens/check_tensorboard.py (ctest train_tensorboard).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "train/loop/metrics_log.h"
#include "train/loop/tensorboard_writer.h"

namespace farthing::train {
namespace {

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

std::string hex_of(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex.push_back(digits[b >> 4]);
    hex.push_back(digits[b & 15]);
  }
  return hex;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(s[at + size_t(i)])) << (8 * i);
  return v;
}

// The records of an event file, each checked for its length and both masked CRCs.
std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size());
    const uint64_t n = le(file, at, 8);
    EXPECT_EQ(le(file, at + 8, 4), masked_crc32c(file.substr(at, 8)));
    EXPECT_LE(at + 16 + n, file.size());
    const std::string data = file.substr(at + 12, n);
    EXPECT_EQ(le(file, at + 12 + n, 4), masked_crc32c(data));
    records.push_back(data);
    at += 16 + n;
  }
  return records;
}

std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with("events.out.tfevents.")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Crc32c, PublishedVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up.push_back(char(i));
    down.push_back(char(31 - i));
  }
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
  // Continuing from an earlier CRC equals the CRC of the whole.
  EXPECT_EQ(crc32c("6789", crc32c("12345")), 0xE3069283u);
  // tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c(b"123456789").
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);
}

// Expected bytes: RecordWriter(io.BytesIO()).write(event_pb2.Event(...).SerializeToString())
// in tensorboard 2.21 (`python3 tools/goldens/check_tensorboard.py --print-record-goldens`).
TEST(TensorBoardRecords, EqualTensorBoardsOwnWriter) {
  EXPECT_EQ(hex_of(tf_record(event_file_version(1.5))),
            "1800000000000000a37f4b2209000000000000f83f1a0d627261696e2e4576656e743a322a28646c");
  const std::vector<std::pair<std::string, float>> values = {{"train/loss", 2.25f},
                                                             {"perf/peak_mem_bytes", 123456789.0f}};
  EXPECT_EQ(hex_of(tf_record(event_scalars(1700000000.25, 7, values))),
            "3c00000000000000c8b7a3520900001040fc54d94110072a2f0a110a0a747261696e2f6c6f737315000010400a1a0a1370"
            "6572662f7065616b5f6d656d5f627974657315a379eb4c0e0ff924");
  EXPECT_EQ(hex_of(tf_record(event_session_start(2.0, 300))),
            "100000000000000095fbfe1809000000000000004010ac023a0208011292da01");
}

TEST(TensorBoardWriter, MetricsLogWritesOneFilePerRunAndResumeStartsAfter) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "farthing_tb_writer_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    MetricsLog log(dir / "metrics.jsonl", -1, true, true);
    log.append({{"step", 1}, {"loss", 3.5}, {"lr", 1e-3}, {"grad_norm", 0.5}, {"tokens", 256}, {"skipped", false}});
    log.append({{"step", 1}, {"eval_loss", 3.25}, {"eval_tokens", 128}});
    EXPECT_EQ(log.tensorboard_path().parent_path(), dir);
  }
  {
    MetricsLog log(dir / "metrics.jsonl", 1, true, true);  // resumed at step 1
    log.append({{"step", 2}, {"loss", 3.0}});
  }
  {
    MetricsLog off(dir / "off.jsonl", -1, true, false);  // metrics.tensorboard: false
    MetricsLog other_rank(dir / "rank1.jsonl", -1, false, true);
    EXPECT_TRUE(off.tensorboard_path().empty());
    EXPECT_TRUE(other_rank.tensorboard_path().empty());
  }
  const std::vector<std::filesystem::path> files = event_files(dir);
  ASSERT_EQ(files.size(), 2u);
  const std::vector<std::string> first = read_records(read_file(files[0]));
  ASSERT_EQ(first.size(), 3u);  // file_version, the training scalars, the eval scalar
  EXPECT_NE(first[0].find("brain.Event:2"), std::string::npos);
  for (const char* tag : {"train/loss", "train/lr", "train/grad_norm"}) {
    EXPECT_NE(first[1].find(tag), std::string::npos) << tag;
  }
  EXPECT_EQ(first[1].find("eval/loss"), std::string::npos);
  EXPECT_NE(first[2].find("eval/loss"), std::string::npos);
  const std::vector<std::string> second = read_records(read_file(files[1]));
  ASSERT_EQ(second.size(), 3u);  // file_version, SessionLog START at step 2, the step-2 scalars
  EXPECT_EQ(second[1].substr(9), from_hex("10023a020801"));  // after wall_time: step 2, session_log START
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farthing::train

// tensorboard_writer.cpp — see tensorboard_writer.h.
//
// The protobuf wire format, as much of it as this file uses: a message is a sequence of fields,
// each a key varint (field_number << 3 | wire_type) followed by the value. Wire types used:
//   0 varint (int64, enum: 7 bits per byte, low group first, high bit = more follows)
//   1 fixed64 (double, little-endian)   2 length-delimited (string, bytes, nested message:
//   a varint length then the bytes)     5 fixed32 (float, little-endian)
// The fields, from tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto:
//   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
//                Summary summary = 5; SessionLog session_log = 7; }
//   Summary    { repeated Value value = 1; }
//   Value      { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1; }   (START = 1)
#include "train/loop/tensorboard_writer.h"

#include <unistd.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstdlib>

#include "framework/core/error.h"

namespace farthing::train {
namespace {

// The byte-at-a-time table of the reflected Castagnoli polynomial.
const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(uint8_t(v)));
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

void put_double(std::string& out, uint32_t field, double v) {
  put_key(out, field, 1);
  put_le(out, std::bit_cast<uint64_t>(v), 8);
}

void put_float(std::string& out, uint32_t field, float v) {
  put_key(out, field, 5);
  put_le(out, std::bit_cast<uint32_t>(v), 4);
}

void put_int64(std::string& out, uint32_t field, int64_t v) {
  put_key(out, field, 0);
  put_varint(out, uint64_t(v));  // negative int64 is 10 bytes of two's complement, as protobuf does
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Event's common head: wall_time = 1, step = 2 (omitted when 0, as protobuf omits defaults).
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_double(e, 1, wall_time);
  if (step != 0) put_int64(e, 2, step);
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host(name);
  for (char& c : host) {
    if (c == '/' || c == '\\') c = '_';
  }
  return host;
}

}  // namespace

uint32_t crc32c(std::string_view bytes, uint32_t crc) {
  const std::array<uint32_t, 256>& table = crc32c_table();
  crc = ~crc;
  for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string tf_record(std::string_view data) {
  std::string length;
  put_le(length, data.size(), 8);
  std::string record = length;
  put_le(record, masked_crc32c(length), 4);
  record.append(data);
  put_le(record, masked_crc32c(data), 4);
  return record;
}

std::string event_file_version(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string event_session_start(double wall_time, int64_t step) {
  std::string session_log;
  put_key(session_log, 1, 0);
  put_varint(session_log, 1);  // SessionLog.START
  std::string e = event_head(wall_time, step);
  put_bytes(e, 7, session_log);
  return e;
}

std::string event_scalars(double wall_time, int64_t step, std::span<const std::pair<std::string, float>> values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    put_bytes(v, 1, tag);
    put_float(v, 2, value);
    put_bytes(summary, 1, v);
  }
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  const std::string prefix = "events.out.tfevents.";
  int64_t seconds = int64_t(now_seconds());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const int64_t earlier = std::strtoll(name.c_str() + prefix.size(), nullptr, 10);
    if (earlier >= seconds) seconds = earlier + 1;
  }
  path_ = dir / (prefix + std::to_string(seconds) + "." + host_name());
  file_ = std::fopen(path_.c_str(), "wb");
  FARTHING_CHECK(file_ != nullptr, "cannot write the TensorBoard event file ", path_.string(),
                 "; check that the run directory is writable, or set metrics.tensorboard: false");
  write_event(event_file_version(now_seconds()));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::session_start(int64_t step) { write_event(event_session_start(now_seconds(), step)); }

void TensorBoardWriter::scalars(int64_t step, std::span<const std::pair<std::string, float>> values) {
  write_event(event_scalars(now_seconds(), step, values));
}

void TensorBoardWriter::write_event(const std::string& event) {
  const std::string record = tf_record(event);
  const bool ok = std::fwrite(record.data(), 1, record.size(), file_) == record.size() && std::fflush(file_) == 0;
  FARTHING_CHECK(ok, "writing the TensorBoard event file ", path_.string(), " failed (disk full?)");
}

}  // namespace farthing::train

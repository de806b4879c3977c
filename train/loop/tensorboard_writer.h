// tensorboard_writer.h — TensorBoard event files (events.out.tfevents.*) written without
// TensorFlow or protobuf: a software CRC32C, the TFRecord framing and the handful of `Event`
// protobuf fields TensorBoard needs for scalars, encoded by hand.
//
// A file is a sequence of records; each record is
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
// and each record's data is one serialized tensorflow.Event. The first event carries
// file_version "brain.Event:2"; the others carry a Summary of {tag, simple_value} pairs.
// Relies on: nothing beyond the standard library. Tested by: tests/train/loop/test_tensorboard_writer.cpp
// (CRC32C vectors, byte-exact records), tools/goldens/check_tensorboard.py (TensorBoard's own
// reader on a real run, ctest train_tensorboard_golden).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace farthing::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum TFRecord uses; continues
// from `crc` (0 to start). crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view bytes, uint32_t crc = 0);
// TFRecord's masked form: rotate right by 15, add 0xA282EAD8 (so a CRC of data holding CRCs
// does not degenerate).
uint32_t masked_crc32c(std::string_view bytes);

// One TFRecord around `data`.
std::string tf_record(std::string_view data);

// Serialized tensorflow.Event messages.
std::string event_file_version(double wall_time);
// SessionLog START at `step`: TensorBoard drops earlier files' events at steps >= step (a run
// resumed from a checkpoint before its last logged step).
std::string event_session_start(double wall_time, int64_t step);
std::string event_scalars(double wall_time, int64_t step, std::span<const std::pair<std::string, float>> values);

// Appends events to one new file in a directory; flushed after every event so TensorBoard sees
// a running job. Not copyable.
class TensorBoardWriter {
 public:
  // Creates dir/events.out.tfevents.<unix seconds>.<host> and writes the file_version event.
  // The seconds are moved past those of any event file already in dir: TensorBoard reads a
  // directory's files in name order, and a resumed run's file must come after the earlier ones.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void session_start(int64_t step);
  void scalars(int64_t step, std::span<const std::pair<std::string, float>> values);
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_event(const std::string& event);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace farthing::train

// h5_checkpoint_writer.h — one self-describing HDF5 checkpoint, written collectively by all
// ranks with parallel HDF5 (MPI-IO): each rank writes its slice of every tensor as a hyperslab
// of the same file. The format is documented in docs/checkpoint_format.md.
//
//   H5CheckpointWriter w(checkpoint_path_for_step(dir, step), comm);   // collective
//   w.write_tensor("model/wte", DType::kBF16, {V, C}, my_offset, my_slice);  // collective
//   w.set_attribute("step", step);  w.write_string("recipe", text);   // collective, same values
//   w.commit({.update_latest = true, .keep_last = 3});                 // collective
//
// Crash safety (docs/design.md §3): everything goes to dir/.NAME.tmp; commit() writes each
// dataset's checksum and the completion mark, closes (flushes) the file, fsyncs it, renames it
// to NAME, fsyncs the directory, then points `latest` at it (atomically) and prunes. A process
// killed at any moment leaves the previous checkpoint and `latest` untouched. A writer
// destroyed without commit() leaves only the .tmp file (removed by a later prune).
// Every call is collective: all ranks call the same methods in the same order with the same
// names, dtypes, shapes and values (checked: a mismatch throws on every rank, never hangs).
// Test hook: FARTHING_CKPT_TEST_KILL_AFTER=N makes rank FARTHING_CKPT_TEST_KILL_RANK (default
// 0) raise SIGKILL right after its N-th write_tensor, to test crash safety; and
// FARTHING_CKPT_TEST_FAULT injects an I/O error at one stage of the save (h5_checkpoint_dir.h).
// Relies on: parallel HDF5 (1.10+), framework/dist/mpi_communicator.h, h5_checksum,
// h5_checkpoint_dir.
// Tested by: tests/ckpt/test_h5_checkpoint.cpp (np 1, 2, 3), tests/ckpt/test_h5_crash.sh,
// tests/ckpt/test_h5_faults.sh.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/dist/mpi_communicator.h"

namespace farthing {

inline constexpr int64_t kCheckpointFormatVersion = 1;

struct CheckpointCommitOptions {
  bool update_latest = true;  // point dir/latest at this file
  int keep_last = 0;          // then keep only the newest K step_*.h5 (0: keep all)
};

class H5CheckpointWriter {
 public:
  // Collective. Rank 0 checks that final_path's directory exists and that a file can be
  // created there; on failure every rank throws the same message and nothing is created.
  H5CheckpointWriter(std::filesystem::path final_path, MpiCommunicator& comm);
  ~H5CheckpointWriter();
  H5CheckpointWriter(const H5CheckpointWriter&) = delete;
  H5CheckpointWriter& operator=(const H5CheckpointWriter&) = delete;

  // Writes this rank's elements [offset, offset + local.numel()) of the row-major tensor
  // `name` (a '/'-separated path; groups are created) of global_shape. local is a contiguous
  // host tensor of dtype. The ranks' slices must tile the whole tensor (a rank may own none).
  void write_tensor(const std::string& name, DType dtype, const Shape& global_shape,
                    int64_t offset, const Tensor& local);
  // A text dataset (the resolved recipe, the model config as JSON...), same on every rank.
  void write_string(const std::string& name, const std::string& text);
  // Scalar attributes on the file's root, same on every rank.
  void set_attribute(const std::string& name, int64_t value);
  void set_attribute(const std::string& name, double value);
  void set_attribute(const std::string& name, const std::string& value);
  // Attributes on a group that a write_tensor above already created ("optim"), same on every rank.
  void set_group_attribute(const std::string& group, const std::string& name, const std::string& value);
  void set_group_attribute(const std::string& group, const std::string& name, const std::vector<float>& values);

  // Marks complete, closes, renames into place; returns the final path. Collective.
  std::filesystem::path commit(const CheckpointCommitOptions& options = {});

  const std::filesystem::path& final_path() const { return final_path_; }
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  void check_same_on_all_ranks(const std::string& what, const std::string& description);
  void check_open(const char* call) const;
  void maybe_kill_for_test();

  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;
  MpiCommunicator& comm_;
  int64_t file_ = -1;  // hid_t
  int64_t tensors_written_ = 0;
  bool committed_ = false;
};

}  // namespace farthing

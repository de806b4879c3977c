// h5_checkpoint_dir.h — the checkpoint folder of a run: step_NNNNNNNN.h5 files, the `latest`
// pointer, durable renames and keep-last-K pruning (docs/design.md §3 and §5).
//
// `latest` is a one-line text file holding the file name of the newest complete checkpoint.
// It is replaced atomically (written to .latest.tmp, fsynced, renamed, directory fsynced) and
// only after the checkpoint it names has itself been renamed into place, so a crash at any
// moment leaves `latest` naming a complete file. These functions run on one process (the
// writer's rank 0); they never touch files that do not follow the naming below.
// Relies on: POSIX (open, fsync, rename).
// Tested by: tests/ckpt/test_h5_checkpoint.cpp, tests/ckpt/test_h5_crash.sh, tests/ckpt/test_h5_faults.sh.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace farthing {

inline constexpr const char* kLatestPointerName = "latest";

// dir/step_00000012.h5
std::filesystem::path checkpoint_path_for_step(const std::filesystem::path& dir, int64_t step);
// The temporary name a checkpoint is written under before its rename: dir/.NAME.tmp
std::filesystem::path checkpoint_temp_path(const std::filesystem::path& final_path);

// Test hook for I/O faults during a save (tests/ckpt/test_h5_faults.sh):
// FARTHING_CKPT_TEST_FAULT=STAGE:KIND makes the save fail at STAGE as the disk would:
//   STAGE  dataset (the first write_tensor), attributes (commit's file attributes), fsync (of
//          the finished temporary file), rename (into its final name), latest (the pointer file)
//   KIND   EIO, ENOSPC, or short (a short write: at `latest` half the pointer is written first)
// on rank FARTHING_CKPT_TEST_FAULT_RANK (default 0; the later stages run on rank 0 only).
// Returns the error text for this stage ("" when no fault is asked for here).
std::string injected_fault_for_test(const char* stage, int rank = 0);

// fsync a file or a directory; throws naming the path and errno's text.
void fsync_path(const std::filesystem::path& path);
// rename(from, to) then fsync of to's directory: durable and atomic on POSIX filesystems.
void durable_rename(const std::filesystem::path& from, const std::filesystem::path& to);

// Points dir/latest at file_name (a name inside dir), atomically and durably.
void write_latest_pointer(const std::filesystem::path& dir, const std::filesystem::path& file_name);
// The checkpoint dir/latest names, or nullopt when there is no `latest`; throws when it names
// a file that does not exist.
std::optional<std::filesystem::path> resolve_latest(const std::filesystem::path& dir);

// Removes all but the newest keep_last step_*.h5 files (by step number) and stale .step_*.tmp
// files of interrupted saves; never the file `latest` names. keep_last <= 0 keeps everything.
// Returns what was removed.
std::vector<std::filesystem::path> prune_checkpoints(const std::filesystem::path& dir,
                                                     int keep_last);

}  // namespace farthing

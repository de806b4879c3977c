// run_dir_lock.h — one writer per run directory. Two `farthing train` processes on
// the same checkpoint.run_dir would interleave checkpoints, `latest` and metrics.jsonl. The
// training job (rank 0) holds an exclusive advisory lock (flock) on RUN_DIR/train.lock for as
// long as it trains, and writes its pid, host and start time into the file so that a second
// writer's refusal can name them.
//
// A crash cannot leave the directory locked: the kernel drops a flock when its process dies.
// What a crash leaves is the file with the dead holder's line in it (a clean end removes the
// file); the next writer takes the lock and reports the stale entry. Readers (eval, inspect,
// generate) take no lock: checkpoints appear by atomic rename, so they read concurrently.
// Where the filesystem refuses flock (some network mounts), the holder is judged from the file
// itself: a live pid on this host, or any entry from another host, refuses.
// Relies on: POSIX flock, gethostname. Tested by: tests/train/loop/test_run_dir_lock.cpp,
// tests/train/loop/test_train_preempt.sh (a second train refused while one runs).
#pragma once

#include <filesystem>
#include <string>

namespace farthing::train {

class RunDirLock {
 public:
  // Takes the lock on run_dir/train.lock (the directory must exist); throws an Error naming the
  // directory and the running holder (pid, host, start) when another writer holds it.
  explicit RunDirLock(const std::filesystem::path& run_dir);
  ~RunDirLock();  // removes the file and drops the lock
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Non-empty when the file held a previous writer's entry although nobody held the lock (that
  // writer crashed or was killed): its line, for the run's notes.
  const std::string& stale_holder() const { return stale_holder_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string stale_holder_;
};

}  // namespace farthing::train

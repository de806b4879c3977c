// test_run_dir_lock.cpp — RunDirLock (train/loop/run_dir_lock.h): one writer per run
// directory. A held lock refuses a second holder with a message naming the directory and the
// holder's pid and host; the file says who holds it; release removes it; a line left by a
// holder that died (no flock held any more) is taken over and reported; a child process that
// holds the lock and is killed leaves the directory free.
#include "train/loop/run_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "framework/core/error.h"

namespace fs = std::filesystem;
using farthing::train::RunDirLock;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/farthing_lock_test.XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(RunDirLock, HolderIsNamedAndASecondWriterIsRefused) {
  TempDir dir;
  std::optional<RunDirLock> first(std::in_place, dir.path);
  EXPECT_TRUE(first->stale_holder().empty());
  const std::string line = read_file(dir.path / "train.lock");
  EXPECT_EQ(line.rfind("pid " + std::to_string(getpid()) + " on host " + host() + " since ", 0), 0u) << line;
  try {
    RunDirLock second(dir.path);
    FAIL() << "a second lock on the same run directory was granted";
  } catch (const farthing::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(dir.path.string() + " is in use by another farthing train"), std::string::npos) << message;
    EXPECT_NE(message.find("pid " + std::to_string(getpid()) + " on host " + host()), std::string::npos) << message;
    EXPECT_NE(message.find("set checkpoint.run_dir to another directory"), std::string::npos) << message;
  }
  // The refused attempt changed nothing: the holder's line is still there.
  EXPECT_EQ(read_file(dir.path / "train.lock"), line);
  first.reset();
  EXPECT_FALSE(fs::exists(dir.path / "train.lock")) << "release leaves no file";
  RunDirLock again(dir.path);  // free again
  EXPECT_TRUE(again.stale_holder().empty());
}

TEST(RunDirLock, ALineLeftByADeadHolderIsTakenOverAndReported) {
  TempDir dir;
  const std::string dead = "pid 999999 on host elsewhere since 2026-01-01T00:00:00Z";
  std::ofstream(dir.path / "train.lock") << dead << "\n";
  RunDirLock lock(dir.path);
  EXPECT_EQ(lock.stale_holder(), dead);
  EXPECT_EQ(read_file(dir.path / "train.lock").rfind("pid " + std::to_string(getpid()), 0), 0u);
}

TEST(RunDirLock, AKilledHolderLeavesTheDirectoryFree) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // holds the lock until killed
    RunDirLock lock(dir.path);
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    for (;;) pause();
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  EXPECT_THROW(RunDirLock(dir.path), farthing::Error) << "the child holds the lock";
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  RunDirLock lock(dir.path);
  EXPECT_EQ(lock.stale_holder().rfind("pid " + std::to_string(child) + " on host ", 0), 0u) << lock.stale_holder();
}

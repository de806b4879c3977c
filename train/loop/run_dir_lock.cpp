// run_dir_lock.cpp — see run_dir_lock.h.
#include "train/loop/run_dir_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "framework/core/error.h"

namespace farthing::train {

namespace {

namespace fs = std::filesystem;

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// "pid 1234 on host node7 since 2026-12-01T17:40:00Z": the whole content of a held lock file.
std::string holder_line() {
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "pid " + std::to_string(::getpid()) + " on host " + this_host() + " since " + when;
}

std::string read_holder(int fd) {
  std::string text;
  char buffer[512];
  ssize_t n = 0;
  off_t at = 0;
  while ((n = ::pread(fd, buffer, sizeof(buffer), at)) > 0 && text.size() < 4096) {
    text.append(buffer, size_t(n));
    at += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void write_holder(int fd, const fs::path& path) {
  const std::string line = holder_line() + "\n";
  FARTHING_CHECK(::ftruncate(fd, 0) == 0 && ::pwrite(fd, line.data(), line.size(), 0) == ssize_t(line.size()),
                 "cannot write the run directory's lock file ", path.string(), ": ", std::strerror(errno));
}

// Without flock: is the writer a line names still there? A live pid on this host is; an entry
// from another host cannot be checked from here, so it counts as live.
bool holder_alive(const std::string& holder) {
  long pid = 0;
  char host[256] = {};
  if (std::sscanf(holder.c_str(), "pid %ld on host %255s", &pid, host) != 2) return false;
  if (this_host() != host) return true;
  return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

RunDirLock::RunDirLock(const fs::path& run_dir) : path_(run_dir / "train.lock") {
  const std::string in_use = "checkpoint.run_dir " + run_dir.string() + " is in use by another farthing train (";
  const std::string what_to_do = "); wait for it to end, or set checkpoint.run_dir to another directory";
  // The previous holder removes the file when it ends: if that happens between our open and our
  // flock, we hold a lock on a file nobody else will open. So the locked file must still be the
  // one the name points at; otherwise try again.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    FARTHING_CHECK(fd >= 0, "cannot open the run directory's lock file ", path_.string(), ": ", std::strerror(errno),
                   "; set checkpoint.run_dir to a writable place");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = read_holder(fd);
      if (error == EWOULDBLOCK) {
        ::close(fd);
        FARTHING_FAIL(in_use, holder.empty() ? "its pid is not written yet" : holder, what_to_do);
      }
      // No flock on this filesystem: judge the holder from the file.
      if (!holder.empty() && holder_alive(holder)) {
        ::close(fd);
        FARTHING_FAIL(in_use, holder, "; this filesystem has no flock, so if that job has ended, delete ",
                      path_.string(), what_to_do);
      }
      stale_holder_ = holder;
      fd_ = fd;
      break;
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      stale_holder_ = read_holder(fd);  // a line left by a holder that did not end cleanly
      fd_ = fd;
    } else {
      ::close(fd);
    }
  }
  FARTHING_CHECK(fd_ >= 0, "could not lock ", path_.string(), ": it kept being replaced by other processes");
  write_holder(fd_, path_);
}

RunDirLock::~RunDirLock() {
  // Remove the name first, then drop the lock: a writer that opened the old file meanwhile
  // finds it no longer named and opens the new one.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace farthing::train

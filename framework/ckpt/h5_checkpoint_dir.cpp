// h5_checkpoint_dir.cpp — see h5_checkpoint_dir.h.
#include "framework/ckpt/h5_checkpoint_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "framework/core/error.h"

namespace farthing {

namespace fs = std::filesystem;

fs::path checkpoint_path_for_step(const fs::path& dir, int64_t step) {
  FARTHING_CHECK(step >= 0, "checkpoint step must be >= 0, got ", step);
  char name[64];
  std::snprintf(name, sizeof name, "step_%08lld.h5", static_cast<long long>(step));
  return dir / name;
}

fs::path checkpoint_temp_path(const fs::path& final_path) {
  return final_path.parent_path() / ("." + final_path.filename().string() + ".tmp");
}

std::string injected_fault_for_test(const char* stage, int rank) {
  const char* fault = std::getenv("FARTHING_CKPT_TEST_FAULT");
  if (fault == nullptr) return {};
  const std::string spec = fault;
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || spec.substr(0, colon) != stage) return {};
  const char* on_rank = std::getenv("FARTHING_CKPT_TEST_FAULT_RANK");
  if (rank != (on_rank ? std::atoi(on_rank) : 0)) return {};
  const std::string kind = spec.substr(colon + 1);
  const std::string what = kind == "EIO" ? std::strerror(EIO)
                         : kind == "ENOSPC" ? std::strerror(ENOSPC)
                         : kind == "short" ? "short write (fewer bytes written than asked)"
                                           : "unknown fault '" + kind + "'";
  return error_detail::concat(what, " [injected at the ", stage, " stage by FARTHING_CKPT_TEST_FAULT]");
}

void fsync_path(const fs::path& path) {
  if (const std::string fault = injected_fault_for_test("fsync"); !fault.empty()) {
    FARTHING_FAIL("fsync of ", path, " failed: ", fault, " (is the disk full or failing?)");
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  FARTHING_CHECK(fd >= 0, "cannot open ", path, " to flush it to disk: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  FARTHING_CHECK(rc == 0, "fsync of ", path, " failed: ", std::strerror(saved),
                 " (is the disk full or failing?)");
}

void durable_rename(const fs::path& from, const fs::path& to) {
  if (const std::string fault = injected_fault_for_test("rename"); !fault.empty()) {
    FARTHING_FAIL("cannot rename ", from, " to ", to, ": ", fault);
  }
  FARTHING_CHECK(::rename(from.c_str(), to.c_str()) == 0, "cannot rename ", from, " to ", to, ": ",
                 std::strerror(errno));
  fs::path dir = to.parent_path();
  fsync_path(dir.empty() ? fs::path(".") : dir);
}

void write_latest_pointer(const fs::path& dir, const fs::path& file_name) {
  const fs::path temp = dir / ".latest.tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    FARTHING_CHECK(out.good(), "cannot write ", temp, ": ", std::strerror(errno));
    const std::string fault = injected_fault_for_test("latest");
    if (!fault.empty()) {
      const std::string line = file_name.filename().string();
      if (fault.rfind("short", 0) == 0) out << line.substr(0, line.size() / 2);  // half written
      out.flush();
      FARTHING_FAIL("cannot write ", temp, ": ", fault, " (disk full?); `latest` still names the previous checkpoint");
    }
    out << file_name.filename().string() << "\n";
    out.flush();
    FARTHING_CHECK(out.good(), "cannot write ", temp, " (disk full?)");
  }
  fsync_path(temp);
  durable_rename(temp, dir / kLatestPointerName);
}

std::optional<fs::path> resolve_latest(const fs::path& dir) {
  const fs::path pointer = dir / kLatestPointerName;
  if (!fs::exists(pointer)) return std::nullopt;
  std::ifstream in(pointer);
  std::string name;
  std::getline(in, name);
  FARTHING_CHECK(!name.empty() && name.find('/') == std::string::npos, pointer,
                 " does not hold a checkpoint file name (got '", name, "')");
  const fs::path target = dir / name;
  FARTHING_CHECK(fs::exists(target), pointer, " names ", target,
                 ", which does not exist (deleted by hand?): pass an explicit checkpoint path");
  return target;
}

namespace {

// The step of "step_NNNNNNNN.h5", or -1 for any other name.
int64_t step_of(const std::string& name) {
  if (name.size() < 9 || name.rfind("step_", 0) != 0 || name.substr(name.size() - 3) != ".h5")
    return -1;
  const std::string digits = name.substr(5, name.size() - 8);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

}  // namespace

std::vector<fs::path> prune_checkpoints(const fs::path& dir, int keep_last) {
  std::vector<fs::path> removed;
  const std::optional<fs::path> latest = resolve_latest(dir);
  std::vector<std::pair<int64_t, fs::path>> complete;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (step_of(name) >= 0) {
      complete.emplace_back(step_of(name), entry.path());
    } else if (name.size() > 5 && name[0] == '.' && step_of(name.substr(1, name.size() - 5)) >= 0 &&
               name.substr(name.size() - 4) == ".tmp") {
      fs::remove(entry.path());  // an interrupted save's leftover
      removed.push_back(entry.path());
    }
  }
  if (keep_last <= 0) return removed;
  std::sort(complete.begin(), complete.end());
  const size_t keep = size_t(keep_last);
  for (size_t i = 0; i + keep < complete.size(); ++i) {
    if (latest && fs::equivalent(*latest, complete[i].second)) continue;
    fs::remove(complete[i].second);
    removed.push_back(complete[i].second);
  }
  return removed;
}

}  // namespace farthing

// verb_plot.cpp — `farthing plot RUN_DIR [RUN_DIR ...] [--out PNG]`: the run's loss and eval loss
// against steps as a PNG (default RUN_DIR/loss.png), or several runs on one plot to compare them
// (default FIRST_RUN_DIR/compare.png). The drawing is matplotlib's, through tools/plot_run.py,
// so the binary gains no plotting dependency; without matplotlib the script names what to install.
// The script is found beside the source tree the binary was built in (BUILD/bin/farthing ->
// tools/plot_run.py two levels up), or at $FARTHING_PLOT_SCRIPT.
// Relies on: python3 on PATH (plot_run.py hands over to /usr/bin/python3 when only Debian's
// python3-matplotlib is installed). Tested by: tests/cli/test_plot.sh.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;

struct PlotArgs {
  std::vector<std::string> run_dirs;
  std::string out;
};

fs::path plot_script() {
  if (const char* env = std::getenv("FARTHING_PLOT_SCRIPT"); env != nullptr && *env != '\0') {
    FARTHING_CHECK(fs::is_regular_file(env), "FARTHING_PLOT_SCRIPT is '", env, "', which is not a file; unset it "
                   "or point it at tools/plot_run.py");
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> tried;
  if (!ec) {
    for (const fs::path& candidate : {exe.parent_path().parent_path().parent_path() / "tools" / "plot_run.py",
                                      exe.parent_path() / "plot_run.py"}) {
      if (fs::is_regular_file(candidate)) return candidate;
      tried.push_back(candidate);
    }
  }
  std::string where;
  for (const fs::path& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  FARTHING_CHECK(false, "cannot find tools/plot_run.py (looked at ", where.empty() ? "nothing" : where,
                 "); set FARTHING_PLOT_SCRIPT to its path");
  return {};
}

int run_plot(const PlotArgs& a) {
  const std::vector<std::string>& run_dirs = a.run_dirs;
  const std::string& out = a.out;
  for (const std::string& run_dir : run_dirs) {
    FARTHING_CHECK(fs::is_regular_file(fs::path(run_dir) / "metrics.jsonl"), "plot: ",
                   (fs::path(run_dir) / "metrics.jsonl").string(),
                   " does not exist; give the run directory of a training run (its checkpoint.run_dir)");
  }
  const std::string script = plot_script().string();
  std::vector<std::string> argv_strings = {"python3", script};
  argv_strings.insert(argv_strings.end(), run_dirs.begin(), run_dirs.end());
  if (!out.empty()) argv_strings.insert(argv_strings.end(), {"--out", out});
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  FARTHING_CHECK(pid >= 0, "plot: cannot start python3 (fork failed)");
  if (pid == 0) {
    execvp("python3", argv.data());
    std::fprintf(stderr, "farthing: error: plot needs python3 on PATH (with matplotlib) to run %s\n", script.c_str());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    FARTHING_CHECK(errno == EINTR, "plot: lost track of python3 (waitpid failed)");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

VerbRun define_plot(CLI::App& verb) {
  auto a = std::make_shared<PlotArgs>();
  verb.add_option("RUN_DIR", a->run_dirs,
                  "a training run's directory (checkpoint.run_dir), holding metrics.jsonl; several:\n"
                  "their curves on one plot, labelled by directory name")
      ->required();
  verb.add_option("--out", a->out, "where to write the plot (default RUN_DIR/loss.png; FIRST_RUN_DIR/compare.png)")
      ->type_name("PNG");
  verb.footer("Needs python3 with matplotlib (python3 -m pip install matplotlib), or Debian's python3-matplotlib\n"
              "(tools/setup.sh installs it; used through /usr/bin/python3 when the PATH python3 lacks it).");
  return [a] { return run_plot(*a); };
}

const VerbRegistration kPlot{"plot", "draw a run's loss and eval loss against steps (PNG)", define_plot};

}  // namespace

// verbs.h — the CLI's verbs. Each verb file registers itself, so adding a verb never edits
// main.cpp: it names the verb, says in one line what it does, and defines its options on the
// CLI11 subcommand main() makes for it (cli.h has what the verbs share). The definition returns
// what runs once the command line has parsed: it reads the values the options were bound to,
// returns the process exit status and lets farthing::Error propagate to main(), which prints it.
//
//   VerbRun define_plot(CLI::App& verb) {
//     auto a = std::make_shared<PlotArgs>();
//     verb.add_option("RUN_DIR", a->run_dirs, "a training run's directory")->required();
//     return [a] { return run_plot(*a); };
//   }
//   const VerbRegistration kPlot{"plot", "draw a run's loss against steps (PNG)", define_plot};
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

using VerbRun = std::function<int()>;
using VerbDefine = std::function<VerbRun(CLI::App& verb)>;

struct VerbInfo {
  std::string name;
  std::string summary;  // what it does, one line (farthing --help lists it)
  VerbDefine define;
};

// Registered verbs, in registration order.
inline std::vector<VerbInfo>& registered_verbs() {
  static std::vector<VerbInfo> verbs;
  return verbs;
}

struct VerbRegistration {
  VerbRegistration(std::string name, std::string summary, VerbDefine define) {
    registered_verbs().push_back({std::move(name), std::move(summary), std::move(define)});
  }
};

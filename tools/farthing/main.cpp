// main.cpp — the farthing command line. The only place that decides to exit: library code
// throws farthing::Error, and this prints it cleanly with a non-zero status. The verbs define
// their options on CLI11 subcommands (verbs.h, cli.h), so `farthing --help`, `farthing VERB
// --help` and `farthing bench SUITE --help` are generated from the options themselves, and a
// refused command line is one line naming the command and what was wrong, exit status 2.
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/dist/abort_on_error.h"
#include "tools/farthing/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--verbose") {
      setenv("FARTHING_DEBUG", "1", 1);  // anywhere on the line: errors also say where they were raised
    } else {
      args.emplace_back(argv[i]);
    }
  }
  // run_main_or_abort prints an escaping error once, naming the rank, and ends every rank of
  // a multi-process job so that no peer waits forever in a collective.
  return farthing::run_main_or_abort([&] { return farthing::cli::run_command(args); });
}

// main.cpp — the farthing command line. The only place that decides to exit: library code
// throws farthing::Error, and this prints it cleanly with a non-zero status. The verbs define
// their options on CLI11 subcommands (verbs.h), so `farthing --help`, `farthing VERB --help` and
// `farthing bench SUITE --help` are generated from the options themselves, and a refused command
// line is one line naming the command and what was wrong, exit status 2 (cli.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "framework/dist/abort_on_error.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

int main(int argc, char** argv) {
  CLI::App app{"farthing — full fine-tuning of transformer language models with as little memory as the\n"
               "numerics allow.",
               "farthing"};
  app.get_formatter()->column_width(30);
  app.require_subcommand(1);
  // Stripped before parsing, so that it may stand anywhere on the line; listed for --help.
  app.add_flag("--verbose")->description("anywhere on the line: errors also say where in the source they were raised");
  app.footer("farthing VERB --help lists a verb's options; farthing bench SUITE --help a suite's.");

  std::vector<VerbInfo> verbs = registered_verbs();
  std::sort(verbs.begin(), verbs.end(), [](const VerbInfo& a, const VerbInfo& b) { return a.name < b.name; });
  std::map<const CLI::App*, VerbRun> runs;
  for (const VerbInfo& v : verbs) {
    CLI::App* verb = app.add_subcommand(v.name, v.summary)->group("Verbs");
    runs[verb] = v.define(*verb);
  }

  std::vector<std::string> words;  // reversed, as CLI::App::parse takes them
  for (int i = argc - 1; i >= 1; --i) {
    if (std::string(argv[i]) == "--verbose") {
      setenv("FARTHING_DEBUG", "1", 1);  // errors also say where they were raised
    } else {
      words.emplace_back(argv[i]);
    }
  }
  if (words.empty()) {
    std::fprintf(stderr, "farthing: no verb given\n\n%s", app.help().c_str());
    return farthing::cli::kExitUsage;
  }
  if (words.back() == "help" && words.size() == 1) {
    std::printf("%s", app.help().c_str());
    return 0;
  }
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);  // the help of the deepest subcommand given, on stdout
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    return farthing::cli::report_parse_error(app, error);
  }
  const VerbRun& run = runs.at(app.get_subcommands().front());
  // run_main_or_abort prints an escaping error once, naming the rank, and ends every rank of
  // a multi-process job so that no peer waits forever in a collective.
  return farthing::run_main_or_abort([&]() -> int {
    try {
      return run();
    } catch (const farthing::cli::UsageError& error) {
      return farthing::cli::report_usage_error(app, error.what());
    }
  });
}

// cli.h — what every verb's options share: the validators that make a bad value one clear line,
// the `--set key=value` option, and the one format of a usage error ("farthing VERB: ..., see
// farthing VERB --help", exit status 2). The options themselves are CLI11's, so a verb's --help is
// generated from the options it registers and cannot drift from them.
// Relies on: CLI11 (libcli11-dev), verbs.h. Tested by: tests/cli/test_help.sh; run_command by
// tests/ckpt/test_export_verb.cpp and tests/tokenizers/test_token_file.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace farthing::cli {

// Exit status of a command line that was refused before anything ran.
inline constexpr int kExitUsage = 2;

// A command line whose options each parsed but do not go together (e.g. --ids with an INPUT).
// Thrown by a verb before it reads or writes anything; main() prints it as a usage error.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs `farthing ARGS...` (ARGS without the program name): builds the command line from the
// registered verbs (verbs.h), parses ARGS, prints --help or a usage error (returning 0 or
// kExitUsage), else runs the verb and returns its status. farthing::Error propagates.
int run_command(const std::vector<std::string>& args);

// Value checks. Each message starts with the value as given, so that the error reads
// "--top '-1' is not a whole number >= 0".
CLI::Validator whole_number_at_least(long long min);
CLI::Validator positive_number();      // > 0 and finite
CLI::Validator non_negative_number();  // >= 0 and finite
CLI::Validator one_of(std::vector<std::string> choices);

// `--set key=value` (repeatable): a recipe key overridden on the command line.
CLI::Option* add_set_option(CLI::App& verb, std::vector<std::string>& overrides);

// "farthing", "farthing plan", "farthing bench train": the words of the command that `root`
// parsed, down to the deepest subcommand given.
std::string command_words(const CLI::App& root);

// Prints a refused command line as one line on stderr, naming the command and what was wrong,
// and returns kExitUsage.
int report_parse_error(const CLI::App& root, const CLI::ParseError& error);
int report_usage_error(const CLI::App& root, const std::string& message);

}  // namespace farthing::cli

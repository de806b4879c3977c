// cli.cpp — the shared parts of the verbs' options and their one error format (cli.h).
#include "tools/farthing/cli.h"

#include <algorithm>
#include <map>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "tools/farthing/verbs.h"

namespace farthing::cli {

namespace {

bool parse_double(const std::string& text, double& value) {
  size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && std::isfinite(value);
}

// The deepest subcommand given on the command line (the root itself when none was).
const CLI::App* innermost(const CLI::App& root) {
  const CLI::App* at = &root;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return at;
}

// What `at`'s subcommands are called in its help, singular: the group "Verbs" gives "verb".
std::string subcommand_kind(const CLI::App& at) {
  const std::vector<const CLI::App*> children = at.get_subcommands([](const CLI::App*) { return true; });
  std::string kind = children.empty() ? "subcommand" : children.front()->get_group();
  for (char& c : kind) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (kind.ends_with('s')) kind.pop_back();
  return kind;
}

// The option or positional whose absence raised a RequiredError, with its description.
std::string missing_required(const CLI::App& at) {
  for (const CLI::Option* opt : at.get_options()) {
    if (opt->get_required() && opt->count() == 0) {
      const std::string name = opt->get_name();
      std::string description = opt->get_description();
      for (char& c : description) c = c == '\n' ? ' ' : c;
      return "no " + name + " given (" + name + ": " + description + ")";
    }
  }
  return "";
}

}  // namespace

CLI::Validator whole_number_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        size_t used = 0;
        long long n = 0;
        try {
          n = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == text.size() && !text.empty() && n >= min) return "";
        return "'" + text + "' is not a whole number >= " + std::to_string(min);
      },
      "", "whole number >= " + std::to_string(min));
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double x = 0.0;
        return parse_double(text, x) && x > 0.0 ? "" : "'" + text + "' is not a positive number";
      },
      "", "positive number");
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double x = 0.0;
        return parse_double(text, x) && x >= 0.0 ? "" : "'" + text + "' is not a number >= 0";
      },
      "", "number >= 0");
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string listed;
  for (size_t i = 0; i < choices.size(); ++i) {
    listed += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  }
  return CLI::Validator(
      [choices = std::move(choices), listed](std::string& text) -> std::string {
        for (const std::string& c : choices) {
          if (text == c) return "";
        }
        return "'" + text + "'; expected " + listed;
      },
      "", "one of " + listed);
}

CLI::Option* add_set_option(CLI::App& verb, std::vector<std::string>& overrides) {
  return verb.add_option("--set", overrides, "override a recipe key, e.g. --set optimizer.lr=1e-4 (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const size_t eq = text.find('=');
            return eq != std::string::npos && eq > 0 ? "" : "'" + text + "' is not key=value";
          },
          "", "key=value"));
}

std::string command_words(const CLI::App& root) {
  std::string words = root.get_name();
  for (const CLI::App* at = &root; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    words += " " + at->get_name();
  }
  return words;
}

int report_usage_error(const CLI::App& root, const std::string& message) {
  const std::string words = command_words(root);
  std::fprintf(stderr, "%s: %s; see %s --help\n", words.c_str(), message.c_str(), words.c_str());
  return kExitUsage;
}

int report_parse_error(const CLI::App& root, const CLI::ParseError& error) {
  const CLI::App& at = *innermost(root);
  const std::vector<std::string> left = root.remaining(true);
  std::string message;
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr;
  const bool required = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  const bool wants_subcommand = at.get_require_subcommand_min() > 0 && at.get_subcommands().empty();
  if ((extras || required) && !left.empty() && left.front().starts_with("-")) {
    // An option nothing took says more than the argument it left missing.
    message = "unknown option '" + left.front() + "'";
  } else if (extras && !left.empty()) {
    message = "unexpected argument '" + left.front() + "'";
  } else if (required && wants_subcommand) {
    const std::string kind = subcommand_kind(at);
    message = left.empty() ? "no " + kind + " given" : "unknown " + kind + " '" + left.front() + "'";
  } else if (required && !missing_required(at).empty()) {
    message = missing_required(at);
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr &&
             std::string(error.what()).ends_with(" missing")) {
    const std::string what = error.what();  // "--top: 1 required N missing"
    message = what.substr(0, what.find(':')) + " needs a value";
  } else {
    // CLI11 writes "--top: <what the validator said>"; the validators' messages start with the
    // quoted value, so "--top '-1' is not ..." reads as one sentence.
    message = error.what();
    const size_t colon = message.find(": '");
    if (colon != std::string::npos && message.starts_with("-")) message.erase(colon, 1);
  }
  return report_usage_error(root, message);
}

int run_command(const std::vector<std::string>& args) {
  CLI::App app{"farthing — full fine-tuning of transformer language models with as little memory as the\n"
               "numerics allow.",
               "farthing"};
  app.get_formatter()->column_width(30);
  app.require_subcommand(1);
  // main() takes it out of the line before parsing, so that it may stand anywhere; listed for --help.
  app.add_flag("--verbose")->description("anywhere on the line: errors also say where in the source they were raised");
  app.footer("farthing VERB --help lists a verb's options; farthing bench SUITE --help a suite's.");

  std::vector<VerbInfo> verbs = registered_verbs();
  std::sort(verbs.begin(), verbs.end(), [](const VerbInfo& a, const VerbInfo& b) { return a.name < b.name; });
  std::map<const CLI::App*, VerbRun> runs;
  for (const VerbInfo& v : verbs) {
    CLI::App* verb = app.add_subcommand(v.name, v.summary)->group("Verbs");
    runs[verb] = v.define(*verb);
  }
  if (args.empty()) {
    std::fprintf(stderr, "farthing: no verb given\n\n%s", app.help().c_str());
    return kExitUsage;
  }
  if (args.size() == 1 && args[0] == "help") {
    std::printf("%s", app.help().c_str());
    return 0;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // as CLI::App::parse takes them
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);  // the help of the deepest subcommand given, on stdout
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    return report_parse_error(app, error);
  }
  try {
    return runs.at(app.get_subcommands().front())();
  } catch (const UsageError& error) {
    return report_usage_error(app, error.what());
  }
}

}  // namespace farthing::cli

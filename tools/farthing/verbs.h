// verbs.h — the CLI verbs implemented outside main.cpp. Each takes the arguments after the
// verb, prints its own --help, returns the process exit status and lets farthing::Error
// propagate to main(), which prints it.
//
// A verb file registers itself, so adding a verb never edits main.cpp:
//   static const VerbRegistration kTrain{"train", "RECIPE [--set k=v]... [--resume latest|PATH]",
//                                        "fine-tune a model as a recipe says", run_train};
#pragma once

#include <functional>
#include <string>
#include <vector>

using VerbFunction = std::function<int(const std::vector<std::string>&)>;

struct VerbInfo {
  std::string name;
  std::string synopsis;  // the arguments, one line
  std::string summary;   // what it does, one line
  VerbFunction run;
};

// Registered verbs, in registration order.
inline std::vector<VerbInfo>& registered_verbs() {
  static std::vector<VerbInfo> verbs;
  return verbs;
}

struct VerbRegistration {
  VerbRegistration(std::string name, std::string synopsis, std::string summary, VerbFunction run) {
    registered_verbs().push_back({std::move(name), std::move(synopsis), std::move(summary), std::move(run)});
  }
};

// farthing tokenize (verb_tokenize.cpp).
int run_tokenize(const std::vector<std::string>& args);

// farthing export (verb_export.cpp).
int run_export(const std::vector<std::string>& args);

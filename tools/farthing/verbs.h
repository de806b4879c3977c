// verbs.h — the CLI verbs implemented outside main.cpp. Each takes the arguments after the
// verb, prints its own --help, returns the process exit status and lets farthing::Error
// propagate to main(), which prints it.
#pragma once

#include <string>
#include <vector>

// farthing tokenize (verb_tokenize.cpp).
int run_tokenize(const std::vector<std::string>& args);

// farthing export (verb_export.cpp).
int run_export(const std::vector<std::string>& args);

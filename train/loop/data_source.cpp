// data_source.cpp — see data_source.h.
#include "train/loop/data_source.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "framework/core/error.h"
#include "train/recipe/recipe.h"

namespace farthing::train {

namespace fs = std::filesystem;

data::DatasetOptions dataset_options(const recipe::RunConfig& config) {
  data::DatasetOptions options;
  options.format = config.data.format;
  options.seq_len = config.data.seq_len;
  options.add_bos = config.data.add_bos;
  options.add_eos = config.data.add_eos;
  options.eval_fraction = config.data.eval_fraction;
  options.chat_template = config.data.chat_template;
  return options;
}

namespace {

bool is_placeholder(const std::string& path) {
  return path.size() >= 2 && path.front() == '<' && path.back() == '>';
}

void check_data_file(const recipe::RunConfig& config, const std::string& key, const std::string& path) {
  const std::string origin = recipe::key_origin(config, key);
  FARTHING_CHECK(!path.empty(), origin, " is empty; expected your training data: a .txt, .jsonl or .tok file");
  // The shipped recipes leave the data to the user: their data.train reads "<your data>".
  FARTHING_CHECK(!is_placeholder(path), origin, " is the placeholder '", path, "'; expected your data: a .txt, ",
                 ".jsonl (text, prompt/response or chat) or .tok file (edit the recipe, or --set ", key, "=PATH)");
  const char* problem = !fs::exists(path)            ? "which does not exist"
                        : !fs::is_regular_file(path) ? "which is not a file"
                        : !std::ifstream(path).good() ? "which cannot be read"
                                                      : nullptr;
  FARTHING_CHECK(problem == nullptr, origin, " is '", path, "', ", problem, " (from ", fs::current_path().string(),
                 "); expected a .txt, .jsonl or .tok file (a relative path counts from where farthing runs)");
}

}  // namespace

void check_data_files(const recipe::RunConfig& config) {
  check_data_file(config, "data.train", config.data.train);
  if (!config.data.eval.empty()) check_data_file(config, "data.eval", config.data.eval);
}

}  // namespace farthing::train

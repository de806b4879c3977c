// data_source.cpp — see data_source.h.
#include "train/loop/data_source.h"

#include <cstdio>
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
  options.packing = config.data.packing;
  options.long_documents = config.data.long_documents;
  options.chat_template = config.data.chat_template;
  return options;
}

namespace {

std::string percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

// One file's counts: "60 documents into 14 sequences of 256 tokens; ...".
std::string counts_text(const data::PackingCounts& c, data::Packing packing, const recipe::RunConfig& config) {
  const int64_t L = config.data.seq_len;
  std::string text = std::to_string(c.documents) + " document(s) into " + std::to_string(c.slots / L) +
                     " sequence(s) of " + std::to_string(L) + " tokens";
  if (packing == data::Packing::kStream) {
    return text + "; the tail of " + std::to_string(c.tokens_dropped) +
           " token(s) short of a whole sequence is dropped; documents see the ones before them in a sequence";
  }
  const std::string how(recipe::enum_name(config.data.long_documents));
  text += "; " + std::to_string(c.documents_cut) + " longer than a sequence (data.long_documents " + how + ")";
  if (c.tokens_cut > 0) text += ", " + std::to_string(c.tokens_cut) + " token(s) cut off";
  return text + "; " + percent(c.padding_slots, c.slots) + " of the tokens are padding";
}

}  // namespace

std::string packing_note(const recipe::RunConfig& config, const data::SplitData& data) {
  std::string text = "data: packing " + std::string(recipe::enum_name(data.packing));
  if (config.data.packing == data::Packing::kAuto) {
    text += data.packing == data::Packing::kDocuments ? " (auto: the data holds prompt/response or chat examples)"
                                                      : " (auto: plain text or tokens)";
  }
  text += ": " + counts_text(data.train_counts, data.packing, config);
  if (!config.data.eval.empty()) text += "; eval file: " + counts_text(data.eval_counts, data.packing, config);
  return text;
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

// export_source.cpp — see export_source.h.
#include "tools/farthing/export_source.h"

#include <fstream>
#include <sstream>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/train_checkpoint_model.h"
#include "framework/core/error.h"
#include "train/recipe/recipe.h"

namespace farthing::cli {

namespace fs = std::filesystem;

const char* const kExportSourceForms =
    "a run directory (its checkpoints/latest), `latest` with --recipe RECIPE, a training checkpoint .h5, "
    "a Hugging Face directory (config.json + *.safetensors), a .safetensors or .index.json file, a .gguf, "
    "or a llama2.c .bin";

namespace {

bool has_safetensors(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") return true;
  }
  return false;
}

// model.<key> of a resolved recipe (recipe_resolved.cpp's output: "model:" then "  key: value"
// lines, each value plain or double-quoted with \", \\ and \xNN escapes, as recipe_scalar.cpp
// writes it). Read as text: a checkpoint's stored recipe may come from an older farthing whose
// keys today's validation would refuse, and only these two keys matter here.
std::string resolved_model_key(const std::string& yaml, const std::string& key) {
  std::istringstream lines(yaml);
  std::string line;
  bool in_model = false;
  while (std::getline(lines, line)) {
    if (!line.starts_with(" ")) in_model = line == "model:";
    if (!in_model || !line.starts_with("  " + key + ": ")) continue;
    const std::string value = line.substr(key.size() + 4);
    if (!value.starts_with("\"")) return value;
    std::string out;
    for (size_t i = 1; i + 1 < value.size(); ++i) {
      if (value[i] != '\\' || i + 2 >= value.size()) {
        out += value[i];
      } else if (value[i + 1] == 'x' && i + 3 < value.size()) {
        out += char(std::stoi(value.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else {
        out += value[++i];
      }
    }
    return out;
  }
  return "";
}

}  // namespace

fs::path resolve_export_from(const std::string& from, const std::string& recipe) {
  if (from == kLatestPointerName && !fs::exists(from)) {
    FARTHING_CHECK(!recipe.empty(), "export --from latest: the newest checkpoint of which run? Add --recipe RECIPE "
                   "(its checkpoint.run_dir), or give the run directory itself: --from runs/NAME");
    const recipe::RunConfig config = recipe::load_recipe(recipe);
    const fs::path dir = fs::path(config.checkpoint.run_dir) / "checkpoints";
    const std::optional<fs::path> latest = resolve_latest(dir);
    FARTHING_CHECK(latest.has_value(), "export --from latest: no checkpoint in ", dir.string(),
                   " (checkpoint.run_dir of ", recipe, " has no 'latest' pointer); train first, or give a checkpoint path");
    return *latest;
  }
  FARTHING_CHECK(recipe.empty(), "export --recipe ", recipe, " is read only with --from latest; --from '", from,
                 "' names what to export itself");
  const fs::path path = from;
  FARTHING_CHECK(fs::exists(path), "export --from '", from, "' does not exist; expected ", kExportSourceForms);
  if (fs::is_directory(path)) {
    for (const fs::path& dir : {path, path / "checkpoints"}) {
      if (fs::exists(dir / kLatestPointerName)) return *resolve_latest(dir);
    }
    FARTHING_CHECK(fs::exists(path / "config.json") && has_safetensors(path), "export --from '", from,
                   "' is a directory with neither checkpoints/latest (a run directory) nor config.json and "
                   "*.safetensors (a Hugging Face model); expected ", kExportSourceForms);
    return path;
  }
  if (path.filename() == kLatestPointerName) return *resolve_latest(path.parent_path());
  return path;
}

std::string export_format_tried(const fs::path& path) {
  const std::string name = path.filename().string();
  if (fs::is_directory(path) || name.ends_with(".safetensors") || name.ends_with(".index.json")) return "safetensors";
  if (name.ends_with(".gguf")) return "GGUF";
  if (ckpt::is_training_checkpoint(path)) return "a training checkpoint (HDF5)";
  return "llama2.c .bin (no HDF5 signature, and no .safetensors, .index.json or .gguf extension)";
}

RunOrigin run_origin(const fs::path& checkpoint) {
  std::string recipe;
  try {
    recipe = H5CheckpointReader(checkpoint).read_string("recipe");
  } catch (const Error&) {
    return {};
  }
  return {resolved_model_key(recipe, "path"), resolved_model_key(recipe, "tokenizer")};
}

std::optional<fs::path> hf_folder_of(const fs::path& model_or_tokenizer) {
  if (model_or_tokenizer.empty()) return std::nullopt;
  const std::string name = model_or_tokenizer.filename().string();
  fs::path folder;
  if (fs::is_directory(model_or_tokenizer)) folder = model_or_tokenizer;
  else if (name.ends_with(".safetensors") || name.ends_with(".index.json") || name == "tokenizer.json")
    folder = model_or_tokenizer.parent_path();
  else return std::nullopt;
  if (folder.empty()) folder = ".";
  if (!fs::exists(folder / "config.json") && !fs::exists(folder / "tokenizer.json")) return std::nullopt;
  return folder;
}

nlohmann::json hf_special_token_ids(const fs::path& folder) {
  nlohmann::json ids = nlohmann::json::object();
  std::ifstream in(folder / "config.json");
  if (!in) return ids;
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  FARTHING_CHECK(config.is_object(), (folder / "config.json").string(), " is not a JSON object");
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (config.contains(key) && !config[key].is_null()) ids[key] = config[key];
  }
  return ids;
}

std::string copy_hf_tokenizer_files(const fs::path& folder, const fs::path& out) {
  // What transformers' save_pretrained writes for a tokenizer (fast and slow), and the chat
  // template file newer versions keep beside tokenizer_config.json.
  static const char* const kTokenizerFiles[] = {"tokenizer.json",   "tokenizer_config.json", "special_tokens_map.json",
                                                "chat_template.jinja", "chat_template.json", "added_tokens.json",
                                                "vocab.json",        "merges.txt",            "tokenizer.model"};
  std::string copied;
  fs::create_directories(out);
  for (const char* name : kTokenizerFiles) {
    if (!fs::is_regular_file(folder / name)) continue;
    std::error_code ec;
    fs::copy_file(folder / name, out / name, fs::copy_options::overwrite_existing, ec);
    FARTHING_CHECK(!ec, "cannot copy ", (folder / name).string(), " to ", out.string(), ": ", ec.message());
    copied += (copied.empty() ? "" : ", ") + std::string(name);
  }
  return copied;
}

}  // namespace farthing::cli

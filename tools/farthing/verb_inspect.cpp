// verb_inspect.cpp — `farthing inspect CKPT [--all] [--top N] [--recipe] [--json]`: what is inside
// a farthing training checkpoint (docs/checkpoint_format.md): format, progress attributes, the
// model config, the optimizer state by kind and format (and the dynamic map of 8-bit moments),
// bytes by group, the largest tensors, and whether every dataset's checksum still holds (exit 1
// naming the damaged one if not).
// A run directory or a checkpoints/ folder means its `latest` checkpoint. Model files users
// bring (HF safetensors dir or file, .gguf, llama2.c .bin) get their format, config and tensors;
// they carry no checksums.
// Relies on: framework/ckpt (H5CheckpointReader, read_model_file), models/common/model_config.h.
// Tested by: tests/train/loop/test_train_resume.sh (the 8-bit map, text and --json); the rest
// checked by hand on a trained checkpoint, a bit-flipped copy (exit 1 naming the dataset),
// --json, --recipe, llama2.c and safetensors files.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/read_model.h"
#include "framework/core/error.h"
#include "train/recipe/recipe.h"
#include "train/plan/memory_estimate.h"
#include "train/loop/train_checkpoint.h"
#include "kernels/numerics/dynamic_map.h"
#include "models/common/model_config.h"
#include "models/common/weights_from_file.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
using farthing::train::format_bytes;
using nlohmann::json;

struct InspectArgs {
  std::string path;
  bool all = false;
  int64_t top = 10;
  bool recipe = false;
  bool json = false;
};

// HDF5's signature sits at offset 0, or 512, 1024, ... after a user block.
bool is_hdf5_file(const fs::path& path) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  for (std::streamoff offset : {0, 512, 1024, 2048, 4096}) {
    char head[8] = {};
    in.clear();
    in.seekg(offset);
    if (!in.read(head, 8)) return false;
    if (std::equal(head, head + 8, kSignature)) return true;
  }
  return false;
}

// A run directory or checkpoints folder -> its `latest` checkpoint; anything else unchanged.
fs::path resolve_checkpoint_path(const fs::path& path) {
  if (!fs::is_directory(path)) return path;
  for (const fs::path& dir : {path, path / "checkpoints"}) {
    if (fs::exists(dir / farthing::kLatestPointerName)) return *farthing::resolve_latest(dir);
  }
  return path;
}

std::string shape_text(const farthing::Shape& s) { return s.str(); }

std::string family_name(farthing::models::ModelFamily f) {
  return f == farthing::models::ModelFamily::kLlama ? "llama" : "gpt2";
}

json config_summary(const farthing::models::ModelConfig& c) {
  return {{"name", c.name},
          {"family", family_name(c.family)},
          {"params", c.num_params()},
          {"dim", c.dim},
          {"hidden_dim", c.hidden_dim},
          {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},
          {"n_kv_heads", c.n_kv_heads},
          {"vocab_size", c.vocab_size},
          {"max_seq_len", c.max_seq_len},
          {"tied_embeddings", c.tied_embeddings}};
}

void print_config(const farthing::models::ModelConfig& c) {
  std::printf("model       %s (%s): %lld params; dim %lld, hidden %lld, %lld layers, %lld heads (%lld kv), "
              "vocab %lld, max_seq_len %lld%s\n",
              c.name.empty() ? "(unnamed)" : c.name.c_str(), family_name(c.family).c_str(), (long long)c.num_params(), (long long)c.dim,
              (long long)c.hidden_dim, (long long)c.n_layers, (long long)c.n_heads, (long long)c.n_kv_heads,
              (long long)c.vocab_size, (long long)c.max_seq_len, c.tied_embeddings ? ", tied embeddings" : "");
}

struct TensorRow {
  std::string name;
  std::string dtype;
  farthing::Shape shape;
  int64_t bytes = 0;
};

void print_tensors(std::vector<TensorRow> rows, const InspectArgs& a, const char* what) {
  std::stable_sort(rows.begin(), rows.end(), [](const TensorRow& x, const TensorRow& y) { return x.bytes > y.bytes; });
  const size_t shown = a.all ? rows.size() : std::min(rows.size(), size_t(a.top));
  if (shown == 0) return;
  if (a.all) std::printf("\n%s (all %zu, largest first):\n", what, rows.size());
  else std::printf("\n%s (largest %zu of %zu; --all lists every one):\n", what, shown, rows.size());
  // Names last: optimizer range names join whole tensor lists and would push the columns apart.
  std::printf("  %12s  %-6s %-18s %s\n", "bytes", "dtype", "shape", "name");
  for (size_t i = 0; i < shown; ++i) {
    const TensorRow& r = rows[i];
    std::printf("  %12s  %-6s %-18s %s\n", format_bytes(r.bytes).c_str(), r.dtype.c_str(), shape_text(r.shape).c_str(),
                r.name.c_str());
  }
}

json tensor_json(const std::vector<TensorRow>& rows) {
  json list = json::array();
  for (const TensorRow& r : rows) {
    std::vector<int64_t> dims(r.shape.dims.begin(), r.shape.dims.begin() + r.shape.rank);
    list.push_back({{"name", r.name}, {"dtype", r.dtype}, {"shape", dims}, {"bytes", r.bytes}});
  }
  return list;
}

// ---- training checkpoints -------------------------------------------------------------------

// One kind of optimizer state dataset: "optim/<range>/<suffix>".
struct StateKind {
  int64_t count = 0;
  int64_t bytes = 0;
};

// The state format a range's datasets imply: f32/bf16 moments, or 8-bit/4-bit codes (told apart
// by elements per absmax block: 256 and 128 values take 256 and 64 code bytes).
std::string range_state_format(const farthing::H5CheckpointReader& r, const std::string& prefix) {
  if (r.has_tensor(prefix + "exp_avg")) return std::string(farthing::dtype_name(r.tensor(prefix + "exp_avg").dtype));
  if (r.has_tensor(prefix + "exp_avg.codes") && r.has_tensor(prefix + "exp_avg.absmax")) {
    const int64_t codes = r.tensor(prefix + "exp_avg.codes").numel;
    const int64_t blocks = std::max<int64_t>(1, r.tensor(prefix + "exp_avg.absmax").numel);
    return codes / blocks > 128 ? "8bit" : "4bit";
  }
  return "unknown";
}

// config.json carries no name; the stored recipe says which preset or weights the run started from.
std::string model_name_from_recipe(const farthing::H5CheckpointReader& reader) {
  try {
    const farthing::recipe::RunConfig run = farthing::recipe::parse_recipe_text(reader.read_string("recipe"), "recipe");
    return run.model.path.empty() ? run.model.preset : fs::path(run.model.path).filename().string();
  } catch (const farthing::Error&) {
    return "";  // an unreadable recipe only costs the name
  }
}

int inspect_checkpoint(const fs::path& path, const InspectArgs& a) {
  const farthing::H5CheckpointReader reader(path);
  if (a.recipe) {
    const std::string recipe = reader.read_string("recipe");
    if (a.json) std::printf("%s\n", json({{"recipe", recipe}}).dump(2).c_str());
    else std::printf("%s%s", recipe.c_str(), recipe.ends_with("\n") ? "" : "\n");
    return 0;
  }

  // Root attributes: the format's own, then the trainer's (train_checkpoint.h).
  json attributes = json::object();
  for (const char* key : {"farthing_format", "farthing_checksum"}) {
    if (reader.has_attribute(key)) attributes[key] = reader.attribute_string(key);
  }
  for (const char* key : {"farthing_format_version", "farthing_writer_world_size", "step", "optimizer_steps",
                          "data_position", "tokens_seen", "skipped_steps", "loss_scale_clean_steps", "seed"}) {
    if (reader.has_attribute(key)) attributes[key] = reader.attribute_i64(key);
  }
  if (reader.has_attribute("loss_scale")) attributes["loss_scale"] = reader.attribute_f64("loss_scale");

  std::optional<farthing::models::ModelConfig> config;
  std::string config_error;
  const bool has_config = std::find(reader.strings().begin(), reader.strings().end(), "model_config") != reader.strings().end();
  if (has_config) {
    try {
      config = farthing::models::config_from_hf_json(reader.read_string("model_config"), model_name_from_recipe(reader));
    } catch (const farthing::Error& e) {
      config_error = e.what();
    }
  }

  // Groups, optimizer state kinds and formats, tensor rows.
  std::map<std::string, StateKind> groups, kinds;
  std::map<std::string, int64_t> format_ranges;
  std::map<std::string, std::string> range_prefixes;  // range name -> "optim/<range>/"
  std::vector<TensorRow> rows;
  for (const farthing::H5TensorInfo& t : reader.tensors()) {
    const int64_t bytes = t.numel * int64_t(farthing::dtype_size_bytes(t.dtype));
    rows.push_back({t.name, std::string(farthing::dtype_name(t.dtype)), t.shape, bytes});
    const size_t slash = t.name.find('/');
    StateKind& g = groups[slash == std::string::npos ? "(root)" : t.name.substr(0, slash + 1)];
    ++g.count;
    g.bytes += bytes;
    if (t.name.starts_with("optim/")) {
      const size_t last = t.name.rfind('/');
      StateKind& k = kinds[t.name.substr(last + 1)];
      ++k.count;
      k.bytes += bytes;
      range_prefixes[t.name.substr(6, last - 6)] = t.name.substr(0, last + 1);
    }
  }
  for (const auto& [range, prefix] : range_prefixes) ++format_ranges[range_state_format(reader, prefix)];
  std::string master = "none";
  if (kinds.count("master")) master = "f32";
  if (kinds.count("master_remainder")) master = kinds.count("master") ? "f32 + remainder16" : "remainder16";
  // The 8-bit moments' map: named in the optim group since farthing recorded it; before that the
  // torch 1.13 map, the only one farthing has coded with.
  std::string dynamic_map;
  if (format_ranges.count("8bit")) {
    namespace tr = farthing::train;
    dynamic_map = reader.has_group_attribute(tr::kOptimGroup, tr::kDynamicMapAttribute)
                      ? reader.group_attribute_string(tr::kOptimGroup, tr::kDynamicMapAttribute)
                      : std::string(farthing::numerics::dynamic_map_name(farthing::numerics::MapLinspace::kTorch1_13)) +
                            " (not recorded: written before checkpoints named their map)";
  }
  int64_t string_bytes = 0;
  for (const std::string& s : reader.strings()) string_bytes += int64_t(reader.read_string(s).size());

  // Checksums last: they read every byte.
  std::string damage;
  try {
    reader.verify();
  } catch (const farthing::Error& e) {
    damage = e.what();
  }
  const size_t datasets = reader.tensors().size() + reader.strings().size();

  if (a.json) {
    json j = {{"path", path.string()},
              {"kind", "farthing-checkpoint"},
              {"file_bytes", int64_t(fs::file_size(path))},
              {"format_version", reader.format_version()},
              {"attributes", attributes}};
    if (config) j["model_config"] = config_summary(*config);
    else if (!config_error.empty()) j["model_config_error"] = config_error;
    json state = json::object();
    for (const auto& [kind, k] : kinds) state[kind] = {{"count", k.count}, {"bytes", k.bytes}};
    j["optimizer"] = {{"kinds", state}, {"range_formats", format_ranges}, {"master", master}};
    if (!dynamic_map.empty()) j["optimizer"]["dynamic_map_8bit"] = dynamic_map;
    json g = json::object();
    for (const auto& [name, k] : groups) g[name] = {{"count", k.count}, {"bytes", k.bytes}};
    g["strings"] = {{"count", int64_t(reader.strings().size())}, {"bytes", string_bytes}};
    j["groups"] = g;
    std::stable_sort(rows.begin(), rows.end(), [](const TensorRow& x, const TensorRow& y) { return x.bytes > y.bytes; });
    if (!a.all && rows.size() > size_t(a.top)) rows.resize(size_t(a.top));
    j["tensors"] = tensor_json(rows);
    j["checksums"] = {{"ok", damage.empty()}, {"datasets", int64_t(datasets)}};
    if (!damage.empty()) j["checksums"]["error"] = damage;
    std::printf("%s\n", j.dump(2).c_str());
    return damage.empty() ? 0 : 1;
  }

  std::printf("checkpoint  %s (%s on disk)\n", path.string().c_str(), format_bytes(int64_t(fs::file_size(path))).c_str());
  std::printf("format      %s version %lld, checksums %s, written by %lld rank(s) (informational)\n",
              attributes.value("farthing_format", std::string("?")).c_str(), (long long)reader.format_version(),
              attributes.value("farthing_checksum", std::string("?")).c_str(),
              (long long)attributes.value("farthing_writer_world_size", int64_t(0)));
  std::string progress;
  for (const char* key : {"step", "optimizer_steps", "data_position", "tokens_seen", "skipped_steps", "loss_scale",
                          "loss_scale_clean_steps", "seed"}) {
    if (attributes.contains(key)) progress += std::string(progress.empty() ? "" : ", ") + key + " " + attributes[key].dump();
  }
  std::printf("progress    %s\n", progress.empty() ? "(no trainer attributes)" : progress.c_str());
  if (config) print_config(*config);
  else std::printf("model       %s\n", config_error.empty() ? "(no model_config)" : config_error.c_str());

  std::string formats;
  for (const auto& [format, n] : format_ranges) {
    formats += (formats.empty() ? "" : ", ") + format + " (" + std::to_string(n) + (n == 1 ? " range)" : " ranges)");
  }
  std::printf("optimizer   moments %s; master %s\n", formats.empty() ? "none" : formats.c_str(), master.c_str());
  if (!dynamic_map.empty()) std::printf("  8-bit map            %s\n", dynamic_map.c_str());
  for (const auto& [kind, k] : kinds) {
    std::printf("  %-20s %5lld datasets %12s\n", kind.c_str(), (long long)k.count, format_bytes(k.bytes).c_str());
  }
  std::printf("bytes       ");
  for (const auto& [name, g] : groups) {
    std::printf("%s %s (%lld), ", name.c_str(), format_bytes(g.bytes).c_str(), (long long)g.count);
  }
  std::printf("strings %s (%zu: recipe, model_config)\n", format_bytes(string_bytes).c_str(), reader.strings().size());
  print_tensors(rows, a, "tensors");
  std::printf("\n");
  if (!damage.empty()) {
    std::printf("checksums: FAILED: %s\n", damage.c_str());
    return 1;
  }
  std::printf("checksums: all %zu datasets intact\n", datasets);
  return 0;
}

// ---- model files users bring ----------------------------------------------------------------

int64_t path_bytes(const fs::path& path) {
  if (!fs::is_directory(path)) return int64_t(fs::file_size(path));
  int64_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(path)) {
    if (e.is_regular_file()) total += int64_t(e.file_size());
  }
  return total;
}

int inspect_model_file(const fs::path& path, const InspectArgs& a) {
  FARTHING_CHECK(!a.recipe, "farthing inspect --recipe: ", path.string(),
                 " is a model file, not a training checkpoint; only checkpoints store a recipe");
  const farthing::ckpt::ModelFile file = farthing::ckpt::read_model_file(path);
  std::optional<farthing::models::ModelConfig> config;
  std::string config_error;
  try {
    config = farthing::models::model_config_from_file(file);
  } catch (const farthing::Error& e) {
    config_error = e.what();
  }
  std::vector<TensorRow> rows;
  for (const auto& [name, t] : file.tensors) rows.push_back({name, "f32", t.shape, t.numel() * 4});

  if (a.json) {
    json j = {{"path", path.string()},
              {"kind", "model-file"},
              {"format", file.format},
              {"file_bytes", path_bytes(path)},
              {"config", file.config},
              {"parameters", file.num_parameters()},
              {"tensor_count", int64_t(rows.size())}};
    if (config) j["model_config"] = config_summary(*config);
    else j["model_config_error"] = config_error;
    std::stable_sort(rows.begin(), rows.end(), [](const TensorRow& x, const TensorRow& y) { return x.bytes > y.bytes; });
    if (!a.all && rows.size() > size_t(a.top)) rows.resize(size_t(a.top));
    j["tensors"] = tensor_json(rows);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model file  %s (%s on disk)\n", path.string().c_str(), format_bytes(path_bytes(path)).c_str());
  std::printf("format      %s; %zu tensors, %lld parameters (%s as fp32, as farthing reads them)\n", file.format.c_str(),
              rows.size(), (long long)file.num_parameters(), format_bytes(file.num_parameters() * 4).c_str());
  if (config) print_config(*config);
  else std::printf("model       not a farthing architecture: %s\n", config_error.c_str());
  print_tensors(rows, a, "tensors (fp32 after reading; the file's own dtypes may be narrower)");
  std::printf("\nchecksums: none in this format\n");
  return 0;
}

int run_inspect(const InspectArgs& a) {
  FARTHING_CHECK(fs::exists(a.path), "farthing inspect: '", a.path, "' does not exist");
  const fs::path path = resolve_checkpoint_path(a.path);
  if (fs::is_regular_file(path) && is_hdf5_file(path)) return inspect_checkpoint(path, a);
  return inspect_model_file(path, a);
}

VerbRun define_inspect(CLI::App& verb) {
  auto a = std::make_shared<InspectArgs>();
  verb.add_option("CKPT", a->path,
                  "a training checkpoint (step_NNNNNNNN.h5), a run directory or its checkpoints/\n"
                  "folder (the `latest` checkpoint), or a model file: HF safetensors dir or file,\n"
                  ".gguf, llama2.c .bin")
      ->required();
  verb.add_flag("--all", a->all, "list every dataset (tensor), not only the largest");
  verb.add_option("--top", a->top, "how many of the largest tensors to list")
      ->type_name("N")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  verb.add_flag("--recipe", a->recipe, "print the resolved recipe stored in the checkpoint, and nothing else");
  verb.add_flag("--json", a->json, "one JSON object instead of text");
  verb.footer("For a checkpoint, every dataset's CRC-32 is recomputed: \"checksums: all N datasets intact\", or\n"
              "exit status 1 and the name of the first damaged dataset.");
  return [a] { return run_inspect(*a); };
}

const VerbRegistration kInspect{"inspect", "what is in a checkpoint or model file, checksums verified", define_inspect};

}  // namespace

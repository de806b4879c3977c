// verb_export.cpp — `farthing export`: any checkpoint farthing reads (safetensors directory,
// GGUF, llama2.c .bin, a farthing training checkpoint .h5) to a Hugging Face directory:
// config.json (torch_dtype set to the stored dtype), generation_config.json (bos/eos ids from
// the model config), model.safetensors or, above --max-shard-size, model-0000i-of-0000N shards
// with model.safetensors.index.json, and, when the source carries one (GGUF metadata, or a
// tokenizer given with --tokenizer, or the one a training checkpoint's stored recipe names),
// tokenizer.json + tokenizer_config.json.
//   farthing export --from PATH --out DIR [--dtype f32|bf16|f16] [--max-shard-size 5GB]
//                   [--tokenizer PATH]
// The default dtype is the model's own, as Hugging Face saves it: bf16 for a training
// checkpoint (its bf16 weights, bit for bit; --dtype f32|f16 export its fp32 master where the
// run kept one); a safetensors model's stored dtype (config torch_dtype, else
// its tensors'); a GGUF's f16/bf16 when its matrices are all that, f32 for quantized ones (their
// dequantized values are exact only in f32); f32 for llama2.c files.
// Relies on: ckpt/read_model.h, ckpt/safetensors.h, ckpt/gguf.h, data/tokenizer_export.h.
// Tested by: tests/ckpt/test_export_verb.cpp; tools/goldens/check_export_with_transformers.py
// checks the output against transformers.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/read_model.h"
#include "framework/ckpt/train_checkpoint_model.h"
#include "framework/ckpt/safetensors.h"
#include "framework/core/error.h"
#include "framework/data/tokenizer_export.h"
#include "framework/data/tokenizer_loaders.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
using farthing::DType;

constexpr const char* kExportUsage =
    "usage: farthing export --from PATH --out DIR [--dtype f32|bf16|f16] [--max-shard-size SIZE]\n"
    "                       [--tokenizer PATH]\n"
    "\n"
    "  --from PATH            safetensors file or directory, .gguf, llama2.c .bin, or a training\n"
    "                         checkpoint (.h5)\n"
    "  --out DIR              written: config.json, generation_config.json, model.safetensors\n"
    "                         (or model-0000i-of-0000N.safetensors + model.safetensors.index.json)\n"
    "  --dtype                stored precision; default: the model's own (bf16 for a training\n"
    "                         checkpoint: its bf16 weights as trained; the source's dtype otherwise;\n"
    "                         f32 for quantized GGUF); bf16/f16 from f32 round to nearest even;\n"
    "                         f32/f16 of a training checkpoint take its fp32 master where kept\n"
    "  --max-shard-size SIZE  shard above SIZE: 5GB (default; GB = 10^9 bytes as Hugging Face\n"
    "                         counts), 500MB, 2GiB, or bytes (--max-shard-bytes N: bytes)\n"
    "  --tokenizer PATH       also write tokenizer.json/tokenizer_config.json from this tokenizer\n"
    "                         (without it: a .gguf source's own, or the one a training checkpoint's\n"
    "                         recipe names when that path exists)\n";

// "5GB" -> 5e9, "2GiB" -> 2^31, "123" -> 123 (Hugging Face's max_shard_size spelling).
uint64_t parse_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  std::string unit = text.substr(digits);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  const std::pair<const char*, double> units[] = {{"", 1.0},     {"B", 1.0},          {"KB", 1e3},
                                                  {"MB", 1e6},   {"GB", 1e9},         {"TB", 1e12},
                                                  {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}};
  double scale = 0.0;
  for (const auto& [name, factor] : units) {
    if (unit == name) scale = factor;
  }
  double number = 0.0;
  bool ok = digits > 0 && scale > 0.0;
  if (ok) {
    try {
      number = std::stod(text.substr(0, digits));
    } catch (const std::exception&) {
      ok = false;
    }
  }
  FARTHING_CHECK(ok && number * scale >= 1.0, "--max-shard-size '", text,
                 "' is not a size; expected bytes or a number with KB, MB, GB, TB, KiB, MiB or GiB (e.g. 5GB)");
  return uint64_t(number * scale);
}

std::optional<DType> dtype_from_torch_name(const std::string& name) {
  if (name == "float32") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  return std::nullopt;
}

const char* torch_name(DType dtype) {
  return dtype == DType::kBF16 ? "bfloat16" : dtype == DType::kF16 ? "float16" : "float32";
}

// The dtype of the first tensor in a safetensors file's header (F32, BF16 or F16).
std::optional<DType> safetensors_file_dtype(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  uint64_t header_bytes = 0;
  if (!in.read(reinterpret_cast<char*>(&header_bytes), 8) || header_bytes > (uint64_t(100) << 20)) return std::nullopt;
  std::string text(header_bytes, '\0');
  if (!in.read(text.data(), std::streamsize(header_bytes))) return std::nullopt;
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  if (!header.is_object()) return std::nullopt;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__" || !entry.is_object() || !entry.contains("dtype")) continue;
    const std::string d = entry["dtype"].is_string() ? entry["dtype"].get<std::string>() : "";
    if (d == "F32") return DType::kF32;
    if (d == "BF16") return DType::kBF16;
    if (d == "F16") return DType::kF16;
    return std::nullopt;
  }
  return std::nullopt;
}

// The model's own dtype (see the header comment).
DType source_dtype(const std::string& from, const farthing::ckpt::ModelFile& model) {
  if (model.format == "farthing-h5") return DType::kBF16;
  if (model.format == "gguf") {
    const farthing::ckpt::GgufFile gguf(from);
    std::set<uint32_t> matrix_types;  // ggml types of the 2-D tensors (1-D norms are f32 in every GGUF)
    for (const farthing::ckpt::GgufTensorInfo& t : gguf.tensors()) {
      if (t.dims.size() >= 2) matrix_types.insert(t.type);
    }
    constexpr uint32_t kGgmlF16 = 1, kGgmlBf16 = 30;
    if (matrix_types == std::set<uint32_t>{kGgmlF16}) return DType::kF16;
    if (matrix_types == std::set<uint32_t>{kGgmlBf16}) return DType::kBF16;
    return DType::kF32;
  }
  if (model.format == "safetensors") {
    for (const char* key : {"torch_dtype", "dtype"}) {
      if (model.config.contains(key) && model.config[key].is_string()) {
        if (const auto d = dtype_from_torch_name(model.config[key].get<std::string>())) return *d;
      }
    }
    fs::path file = from;
    if (fs::is_directory(file)) {
      file = file / "model.safetensors";
      if (!fs::exists(file)) {
        for (const auto& entry : fs::directory_iterator(from)) {
          if (entry.path().extension() == ".safetensors") {
            file = entry.path();
            break;
          }
        }
      }
    } else if (file.string().ends_with(".index.json")) {
      std::ifstream in(file);
      const nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
      if (index.is_object() && index.contains("weight_map") && index["weight_map"].is_object() &&
          !index["weight_map"].empty() && index["weight_map"].begin()->is_string()) {
        file = file.parent_path() / index["weight_map"].begin()->get<std::string>();
      }
    }
    if (const auto d = safetensors_file_dtype(file)) return *d;
  }
  return DType::kF32;
}

// model.<key> of a resolved recipe (recipe_resolved.cpp's output: "model:" then "  key: value"
// lines, each value plain or double-quoted with \", \\ and \xNN escapes, as recipe_scalar.cpp
// writes it). Read as text so that this verb (and its test) needs no YAML library.
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

// The tokenizer a training run used, as the recipe stored in its checkpoint names it (resolved as
// the trainer does: model.tokenizer, else the GGUF itself or tokenizer.json beside model.path),
// when that path exists from here; "" (with a note) otherwise.
std::string tokenizer_of_training_run(const std::string& checkpoint) {
  std::string recipe;
  try {
    recipe = farthing::H5CheckpointReader(checkpoint).read_string("recipe");
  } catch (const farthing::Error&) {
    return "";
  }
  std::string found = resolved_model_key(recipe, "tokenizer");
  const std::string model_path = resolved_model_key(recipe, "path");
  if (found.empty() && !model_path.empty()) {
    const fs::path weights = model_path;
    const fs::path dir = fs::is_directory(weights) ? weights : weights.parent_path();
    found = weights.extension() == ".gguf" ? weights.string() : (dir / "tokenizer.json").string();
  }
  if (found.empty()) return "";
  if (!fs::exists(found)) {
    std::fprintf(stderr, "farthing export: the run's tokenizer %s is not there from here; pass --tokenizer PATH "
                 "to write the tokenizer files\n", found.c_str());
    return "";
  }
  return found;
}

// generation_config.json as transformers writes it from a model config: the special token ids.
void write_generation_config(const fs::path& dir, const nlohmann::json& config) {
  nlohmann::json g = {{"_from_model_config", true}};
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (config.contains(key) && !config[key].is_null()) g[key] = config[key];
  }
  std::ofstream out(dir / "generation_config.json", std::ios::trunc);
  out << g.dump(2) << "\n";
  FARTHING_CHECK(out.good(), "cannot write ", (dir / "generation_config.json").string());
}

}  // namespace

int run_export(const std::vector<std::string>& args) {
  std::string from, out, tokenizer;
  farthing::ckpt::SafetensorsWriteOptions options;
  options.max_shard_bytes = 5'000'000'000;  // Hugging Face's default max_shard_size "5GB"
  std::optional<DType> dtype;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      FARTHING_CHECK(i + 1 < args.size(), "option ", a, " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kExportUsage);
      return 0;
    }
    if (a == "--from") from = value();
    else if (a == "--out") out = value();
    else if (a == "--dtype") dtype = farthing::parse_dtype(value());
    else if (a == "--max-shard-size") options.max_shard_bytes = parse_size(value());
    else if (a == "--max-shard-bytes") options.max_shard_bytes = parse_size(value());
    else if (a == "--tokenizer") tokenizer = value();
    else {
      std::fprintf(stderr, "farthing export: unknown option '%s'\n\n%s", a.c_str(), kExportUsage);
      return 2;
    }
  }
  if (from.empty() || out.empty()) {
    std::fprintf(stderr, "farthing export: need --from and --out\n\n%s", kExportUsage);
    return 2;
  }
  // A training checkpoint: bf16 exports its bf16 weights bit for bit (what the run computed with);
  // a wider dtype takes the fp32 master where the run kept one, the same model before rounding.
  const bool training_checkpoint = farthing::ckpt::is_training_checkpoint(from);
  const bool wider_than_bf16 = dtype && *dtype != DType::kBF16;
  farthing::ckpt::ModelFile model =
      training_checkpoint ? farthing::ckpt::read_training_checkpoint_model(
                                from, wider_than_bf16 ? farthing::ckpt::CheckpointWeights::kMasterWhereKept
                                                      : farthing::ckpt::CheckpointWeights::kWorking)
                          : farthing::ckpt::read_model_file(from);
  options.dtype = dtype ? *dtype : source_dtype(from, model);
  model.config["torch_dtype"] = torch_name(options.dtype);
  if (tokenizer.empty() && model.format == "farthing-h5") tokenizer = tokenizer_of_training_run(from);
  std::string chat_template;
  const std::string gguf_path = tokenizer.empty() && from.ends_with(".gguf") ? from
                                : tokenizer.ends_with(".gguf")                ? tokenizer
                                                                              : "";
  if (!gguf_path.empty()) {
    const farthing::ckpt::GgufFile gguf(gguf_path);
    if (tokenizer.empty() && gguf.has("tokenizer.ggml.model")) tokenizer = gguf_path;
    chat_template = gguf.get_string("tokenizer.chat_template", "");
  }
  auto write_all = [&](const farthing::data::Tokenizer* tok) {
    // A training checkpoint's config has no special token ids: the tokenizer's fill the gap.
    if (tok && !model.config.contains("bos_token_id") && tok->bos_id() >= 0) model.config["bos_token_id"] = tok->bos_id();
    if (tok && !model.config.contains("eos_token_id") && tok->eos_id() >= 0) model.config["eos_token_id"] = tok->eos_id();
    farthing::ckpt::write_safetensors(out, model, options);
    write_generation_config(out, model.config);
    if (tok) farthing::data::write_hf_tokenizer_files(*tok, out, chat_template);
  };
  if (tokenizer.empty()) {
    write_all(nullptr);
  } else {
    const farthing::data::Tokenizer tok = farthing::data::load_tokenizer(tokenizer);
    write_all(&tok);
  }
  const bool sharded = fs::exists(fs::path(out) / "model.safetensors.index.json");
  std::fprintf(stderr, "farthing export: %s (%s, %lld parameters) -> %s: %s%s%s\n", from.c_str(),
               model.format.c_str(), static_cast<long long>(model.num_parameters()), out.c_str(),
               std::string(farthing::dtype_name(options.dtype)).c_str(), dtype ? "" : " (the model's own dtype)",
               sharded ? ", sharded with model.safetensors.index.json" : "");
  if (!tokenizer.empty()) std::fprintf(stderr, "farthing export: tokenizer files from %s\n", tokenizer.c_str());
  return 0;
}

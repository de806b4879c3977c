// verb_export.cpp — `farthing export`: any checkpoint farthing reads (safetensors directory,
// GGUF, llama2.c .bin, a farthing training checkpoint .h5, a run directory or `latest`) to a
// Hugging Face directory: config.json (torch_dtype set to the stored dtype), generation_config.json,
// model.safetensors or, above --max-shard-size, model-0000i-of-0000N shards with
// model.safetensors.index.json, and the tokenizer files.
//   farthing export --from PATH|latest --out DIR [--recipe RECIPE] [--dtype f32|bf16|f16]
//                   [--max-shard-size 5GB] [--tokenizer PATH]
// The export chats as the model it came from: when that model (the --from directory, or the
// model.path a training checkpoint's recipe names) is a Hugging Face folder, its tokenizer files
// (tokenizer_config.json with the chat template and bos/eos, tokenizer.json, ...) and its
// generation_config.json are copied as they are, and its config.json's bos/eos/pad ids go into
// config.json; a GGUF's tokenizer, chat template and ids are written from its metadata
// (export_source.h). Everything is read and checked before the first file is written.
// The default dtype is the model's own, as Hugging Face saves it: bf16 for a training
// checkpoint (its bf16 weights, bit for bit; --dtype f32|f16 export its fp32 master where the
// run kept one); a safetensors model's stored dtype (config torch_dtype, else
// its tensors'); a GGUF's f16/bf16 when its matrices are all that, f32 for quantized ones (their
// dequantized values are exact only in f32); f32 for llama2.c files.
// Relies on: ckpt/read_model.h, ckpt/safetensors.h, ckpt/gguf.h, data/tokenizer_export.h,
// export_source.h.
// Tested by: tests/ckpt/test_export_verb.cpp, tests/cli/test_export_chat.sh;
// tools/goldens/check_export_with_transformers.py and tools/goldens/check_export_chat.py check
// the output against transformers.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/read_model.h"
#include "framework/ckpt/train_checkpoint_model.h"
#include "framework/ckpt/safetensors.h"
#include "framework/core/error.h"
#include "framework/data/tokenizer_export.h"
#include "framework/data/tokenizer_loaders.h"
#include "tools/farthing/export_source.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
using farthing::DType;

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


namespace {

// The tokenizer a training run used, resolved as the trainer does (model.tokenizer, else the GGUF
// itself or tokenizer.json beside model.path), when that path exists from here; "" (with a
// note) otherwise.
std::string tokenizer_of_run(const farthing::cli::RunOrigin& origin) {
  std::string found = origin.tokenizer;
  if (found.empty() && !origin.model_path.empty()) {
    const fs::path weights = origin.model_path;
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

}  // namespace

struct ExportArgs {
  std::string from, out, tokenizer, recipe;
  std::string dtype;                 // "": the model's own
  std::string max_shard_size = "5GB";  // Hugging Face's default max_shard_size
};

int run_export(const ExportArgs& a) {
  const std::string& from = a.from;
  const std::string& out = a.out;
  const std::string& recipe = a.recipe;
  std::string tokenizer = a.tokenizer;
  farthing::ckpt::SafetensorsWriteOptions options;
  options.max_shard_bytes = parse_size(a.max_shard_size);
  std::optional<DType> dtype;  // unset: the model's own
  if (!a.dtype.empty()) dtype = farthing::parse_dtype(a.dtype);
  const fs::path source = farthing::cli::resolve_export_from(from, recipe);
  // A training checkpoint: bf16 exports its bf16 weights bit for bit (what the run computed with);
  // a wider dtype takes the fp32 master where the run kept one, the same model before rounding.
  const bool training_checkpoint = farthing::ckpt::is_training_checkpoint(source);
  const bool wider_than_bf16 = dtype && *dtype != DType::kBF16;
  farthing::ckpt::ModelFile model;
  try {
    model = training_checkpoint ? farthing::ckpt::read_training_checkpoint_model(
                                      source, wider_than_bf16 ? farthing::ckpt::CheckpointWeights::kMasterWhereKept
                                                              : farthing::ckpt::CheckpointWeights::kWorking)
                                : farthing::ckpt::read_model_file(source);
  } catch (const farthing::Error& e) {
    FARTHING_FAIL("export --from '", from, "': cannot read ", source.string(), " as ",
                  farthing::cli::export_format_tried(source), ": ", e.what(), " (farthing reads ",
                  farthing::cli::kExportSourceForms, ")");
  }
  options.dtype = dtype ? *dtype : source_dtype(source.string(), model);
  model.config["torch_dtype"] = torch_name(options.dtype);

  // The model the weights came from: the source itself, or the model a training run started from.
  std::string origin = source.string();
  if (training_checkpoint) {
    const farthing::cli::RunOrigin run = farthing::cli::run_origin(source);
    origin = run.model_path;
    if (tokenizer.empty()) tokenizer = tokenizer_of_run(run);
  }
  const std::optional<fs::path> origin_folder = farthing::cli::hf_folder_of(origin);
  if (tokenizer.empty() && !training_checkpoint && origin_folder && fs::exists(*origin_folder / "tokenizer.json")) {
    tokenizer = (*origin_folder / "tokenizer.json").string();
  }
  // Its special token ids win over whatever the weights' file says (a training checkpoint's
  // config has none; the tokenizer's guess below fills only what is still missing).
  if (origin_folder) {
    const nlohmann::json ids = farthing::cli::hf_special_token_ids(*origin_folder);
    for (const auto& [key, id] : ids.items()) model.config[key] = id;
  }
  const std::optional<fs::path> origin_generation_config =
      origin_folder && fs::is_regular_file(*origin_folder / "generation_config.json")
          ? std::optional<fs::path>(*origin_folder / "generation_config.json")
          : std::nullopt;

  // The tokenizer: a Hugging Face folder's files are copied as they are (they carry the chat
  // template and the bos/eos transformers uses); any other tokenizer is written out from what
  // was loaded, with a GGUF's chat template.
  const std::optional<fs::path> tokenizer_folder = farthing::cli::hf_folder_of(tokenizer);
  const bool copy_tokenizer_files = tokenizer_folder && fs::exists(*tokenizer_folder / "tokenizer_config.json");
  std::string chat_template;
  const std::string gguf_path = tokenizer.empty() && source.extension() == ".gguf" ? source.string()
                                : tokenizer.ends_with(".gguf")                     ? tokenizer
                                                                                   : "";
  if (!gguf_path.empty()) {
    const farthing::ckpt::GgufFile gguf(gguf_path);
    if (tokenizer.empty() && gguf.has("tokenizer.ggml.model")) tokenizer = gguf_path;
    chat_template = gguf.get_string("tokenizer.chat_template", "");
  }
  std::unique_ptr<farthing::data::Tokenizer> tok;
  if (!tokenizer.empty()) tok.reset(new farthing::data::Tokenizer(farthing::data::load_tokenizer(tokenizer)));
  // A training checkpoint's config has no special token ids: the tokenizer's fill the gap.
  if (tok && !model.config.contains("bos_token_id") && tok->bos_id() >= 0) model.config["bos_token_id"] = tok->bos_id();
  if (tok && !model.config.contains("eos_token_id") && tok->eos_id() >= 0) model.config["eos_token_id"] = tok->eos_id();

  // Everything is read: write.
  farthing::ckpt::write_safetensors(out, model, options);
  if (origin_generation_config) {
    fs::copy_file(*origin_generation_config, fs::path(out) / "generation_config.json",
                  fs::copy_options::overwrite_existing);
  } else {
    write_generation_config(out, model.config);
  }
  std::string tokenizer_note;
  if (copy_tokenizer_files) {
    tokenizer_note = farthing::cli::copy_hf_tokenizer_files(*tokenizer_folder, out) + " copied from " +
                     tokenizer_folder->string();
  } else if (tok) {
    farthing::data::write_hf_tokenizer_files(*tok, out, chat_template);
    tokenizer_note = "tokenizer.json, tokenizer_config.json written from " + tokenizer +
                     (chat_template.empty() ? " (no chat template)" : " (with its chat template)");
  }
  const bool sharded = fs::exists(fs::path(out) / "model.safetensors.index.json");
  std::fprintf(stderr, "farthing export: %s (%s, %lld parameters) -> %s: %s%s%s\n", source.c_str(),
               model.format.c_str(), static_cast<long long>(model.num_parameters()), out.c_str(),
               std::string(farthing::dtype_name(options.dtype)).c_str(), dtype ? "" : " (the model's own dtype)",
               sharded ? ", sharded with model.safetensors.index.json" : "");
  if (!tokenizer_note.empty()) std::fprintf(stderr, "farthing export: %s\n", tokenizer_note.c_str());
  if (origin_generation_config) {
    std::fprintf(stderr, "farthing export: generation_config.json copied from %s\n", origin_generation_config->c_str());
  }
  return 0;
}

namespace {

VerbRun define_export(CLI::App& verb) {
  auto a = std::make_shared<ExportArgs>();
  verb.add_option("--from", a->from,
                  "safetensors file or directory, .gguf, llama2.c .bin, a training checkpoint (.h5),\n"
                  "a run directory (its newest checkpoint), or latest: the newest checkpoint in\n"
                  "--recipe RECIPE's checkpoint.run_dir")
      ->type_name("PATH|latest")
      ->required();
  verb.add_option("--out", a->out,
                  "written: config.json, generation_config.json, model.safetensors (or\n"
                  "model-0000i-of-0000N.safetensors + model.safetensors.index.json), tokenizer files")
      ->type_name("DIR")
      ->required();
  verb.add_option("--recipe", a->recipe, "the recipe whose run --from latest means")->type_name("RECIPE");
  verb.add_option("--dtype", a->dtype,
                  "stored precision; default: the model's own (bf16 for a training checkpoint: its\n"
                  "bf16 weights as trained; the source's dtype otherwise; f32 for quantized GGUF);\n"
                  "bf16/f16 from f32 round to nearest even; f32/f16 of a training checkpoint take\n"
                  "its fp32 master where kept")
      ->type_name("f32|bf16|f16")
      ->check(farthing::cli::one_of({"f32", "bf16", "f16"}));
  verb.add_option("--max-shard-size,--max-shard-bytes", a->max_shard_size,
                  "shard above SIZE: bytes, or a number with KB, MB, GB, TB (powers of 10, as Hugging\n"
                  "Face counts) or KiB, MiB, GiB")
      ->type_name("SIZE")
      ->capture_default_str();
  verb.add_option("--tokenizer", a->tokenizer,
                  "the tokenizer files to write (default: the source's own, or the one a training\n"
                  "checkpoint's recipe names when that path exists); a Hugging Face folder's files are\n"
                  "copied as they are (chat template, bos/eos), others are written from the tokenizer")
      ->type_name("PATH");
  verb.footer("The bos/eos ids in config.json and generation_config.json are those of the model the\n"
              "checkpoint came from (a Hugging Face folder's config.json and generation_config.json).");
  return [a] { return run_export(*a); };
}

const VerbRegistration kExport{"export",
                               "write a model file or a run's checkpoint as a Hugging Face directory (safetensors,\n"
                               "config.json, the source's tokenizer and chat template)",
                               define_export};

}  // namespace

// verb_export.cpp — `farthing export`: any checkpoint farthing reads (safetensors directory,
// GGUF, llama2.c .bin) to a Hugging Face directory: config.json, model.safetensors (sharded with
// an index above --max-shard-bytes) and, when the source carries one (GGUF metadata, or a
// tokenizer given with --tokenizer), tokenizer.json + tokenizer_config.json.
//   farthing export --from PATH --out DIR [--dtype f32|bf16|f16] [--max-shard-bytes N]
//                   [--tokenizer PATH]
// Training checkpoints (HDF5) will come through the same writer once they exist.
// Relies on: ckpt/read_model.h, ckpt/safetensors.h, data/tokenizer_export.h.
// Tested by: tests/ckpt/test_export_verb.cpp; tools/goldens/check_export_with_transformers.py
// checks the output against transformers.
#include <cstdio>
#include <string>

#include "framework/ckpt/gguf.h"
#include "framework/ckpt/read_model.h"
#include "framework/ckpt/safetensors.h"
#include "framework/core/error.h"
#include "framework/data/tokenizer_export.h"
#include "framework/data/tokenizer_loaders.h"
#include "tools/farthing/verbs.h"

namespace {
constexpr const char* kExportUsage =
    "usage: farthing export --from PATH --out DIR [--dtype f32|bf16|f16] [--max-shard-bytes N]\n"
    "                       [--tokenizer PATH]\n"
    "\n"
    "  --from PATH            safetensors file or directory, .gguf, or llama2.c .bin\n"
    "  --out DIR              written: config.json, model.safetensors (or shards + index)\n"
    "  --dtype                stored precision (default f32; bf16/f16 round to nearest even)\n"
    "  --max-shard-bytes N    shard above N bytes (default 5 GiB)\n"
    "  --tokenizer PATH       also write tokenizer.json/tokenizer_config.json from this tokenizer\n"
    "                         (a .gguf source's own tokenizer is written without it)\n";
}  // namespace

int run_export(const std::vector<std::string>& args) {
  std::string from, out, tokenizer;
  farthing::ckpt::SafetensorsWriteOptions options;
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
    else if (a == "--dtype") options.dtype = farthing::parse_dtype(value());
    else if (a == "--max-shard-bytes") options.max_shard_bytes = std::stoull(value());
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
  const farthing::ckpt::ModelFile model = farthing::ckpt::read_model_file(from);
  farthing::ckpt::write_safetensors(out, model, options);
  std::string chat_template;
  if (tokenizer.empty() && from.ends_with(".gguf")) {
    const farthing::ckpt::GgufFile gguf(from);
    if (gguf.has("tokenizer.ggml.model")) tokenizer = from;
    chat_template = gguf.get_string("tokenizer.chat_template", "");
  }
  if (!tokenizer.empty()) {
    farthing::data::write_hf_tokenizer_files(farthing::data::load_tokenizer(tokenizer), out, chat_template);
  }
  std::fprintf(stderr, "farthing export: %s (%s, %lld parameters) -> %s%s\n", from.c_str(), model.format.c_str(),
               static_cast<long long>(model.num_parameters()), out.c_str(),
               tokenizer.empty() ? "" : " with tokenizer");
  return 0;
}

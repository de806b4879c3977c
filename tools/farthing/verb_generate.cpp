// verb_generate.cpp — `farthing generate`: text from a model file with the KV-cache decoder.
//
//   farthing generate --model PATH [--tokenizer PATH] [--prompt TEXT] [--max-new-tokens N]
//                     [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop TEXT]...
// Loads any model file ckpt::read_model_file reads (HF folder / safetensors, .gguf, llama2.c
// .bin) in fp32, encodes the prompt (BOS first when the tokenizer's family adds one; an empty
// prompt is BOS alone), samples and prints the prompt followed by the new text to stdout as the
// tokens come; a throughput line goes to stderr. Generation stops at EOS, at any --stop text's
// token(s) (a --stop text must be exactly one token), at BOS for llama2.c models (as llama2.c's
// `run` does), or after N new tokens.
// Relies on: ckpt/read_model.h, data/tokenizer_loaders.h, models/common/sampling.h.
// Tested by: tests/cli/test_generate.sh (ctest cli_generate).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "framework/ckpt/read_model.h"
#include "framework/core/error.h"
#include "framework/data/tokenizer_loaders.h"
#include "models/common/kv_cache_decoder.h"
#include "models/common/presets.h"
#include "models/common/sampling.h"
#include "models/common/weights_from_file.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

namespace fs = std::filesystem;
using farthing::models::GenerationOptions;

struct GenerateArgs {
  std::string model, tokenizer, prompt;
  std::vector<std::string> stop_texts;
  std::string logits_out;  // where to write the prompt's next-token logits (float32), for checks
  GenerationOptions options;
};

// The tokenizer the user named, or the one that travels with the model.
fs::path default_tokenizer(const fs::path& model) {
  if (model.extension() == ".gguf") return model;
  const fs::path dir = fs::is_directory(model) ? model : model.parent_path();
  const fs::path beside = dir / "tokenizer.json";
  FARTHING_CHECK(fs::exists(beside), "farthing generate: no tokenizer for model ", model.string(), " (looked for ",
                 beside.string(), "); pass --tokenizer PATH");
  return beside;
}

}  // namespace

int run_generate(const GenerateArgs& a) {
  const std::string& model_path = a.model;
  const std::string& tokenizer_path = a.tokenizer;
  const std::string& prompt = a.prompt;
  const std::vector<std::string>& stop_texts = a.stop_texts;
  const std::string& logits_out = a.logits_out;
  GenerationOptions options = a.options;
  farthing::models::validate(options);
  FARTHING_CHECK(fs::exists(model_path), "farthing generate: model file ", model_path, " does not exist");

  const auto load_start = std::chrono::steady_clock::now();
  const farthing::ckpt::ModelFile file = farthing::ckpt::read_model_file(model_path);
  const farthing::data::Tokenizer tok =
      farthing::data::load_tokenizer(tokenizer_path.empty() ? default_tokenizer(model_path) : fs::path(tokenizer_path));
  const farthing::models::TransformerSpec spec =
      farthing::models::make_spec(farthing::models::model_config_from_file(file));
  FARTHING_CHECK(tok.vocab_size() <= spec.config.vocab_size, "farthing generate: tokenizer has ", tok.vocab_size(),
                 " tokens but model ", model_path, " has vocab_size ", spec.config.vocab_size,
                 " (wrong --tokenizer?)");
  std::vector<float> params(size_t(spec.layout.total_elems()));
  farthing::models::copy_weights_from_file(file, spec.layout, params.data());
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();

  std::vector<int32_t> ids;
  if (tok.spec().add_bos || prompt.empty()) {
    FARTHING_CHECK(tok.bos_id() >= 0, "farthing generate: the tokenizer has no BOS token; give a non-empty --prompt");
    ids.push_back(tok.bos_id());
  }
  const std::vector<int32_t> text_ids = tok.encode(prompt);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());

  if (tok.eos_id() >= 0) options.stop_tokens.push_back(tok.eos_id());
  if (file.format == "llama2c" && tok.bos_id() >= 0) options.stop_tokens.push_back(tok.bos_id());
  for (const std::string& s : stop_texts) {
    const std::vector<int32_t> stop_ids = tok.encode(s);
    FARTHING_CHECK(stop_ids.size() == 1, "farthing generate: --stop '", s, "' is ", stop_ids.size(),
                   " tokens; a stop text must be exactly one token");
    options.stop_tokens.push_back(stop_ids[0]);
  }

  const int64_t positions = int64_t(ids.size()) + options.max_new_tokens - 1;
  FARTHING_CHECK(positions <= spec.config.max_seq_len, "farthing generate: prompt (", ids.size(),
                 " tokens) + --max-new-tokens (", options.max_new_tokens, ") - 1 = ", positions,
                 " positions exceeds the model's context of ", spec.config.max_seq_len);
  farthing::models::KvCacheDecoder decoder(spec, params.data(), std::max<int64_t>(positions, int64_t(ids.size())));
  if (!logits_out.empty()) {  // the next-token logits after the prompt, as raw float32 (for golden checks)
    const std::span<const float> logits = decoder.prefill(ids);
    std::ofstream out(logits_out, std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
    FARTHING_CHECK(out.good(), "farthing generate: cannot write --logits-out ", logits_out);
  }

  // Stream: decode everything after a leading BOS and print the bytes not yet printed (a
  // token's text can depend on its neighbours, e.g. SentencePiece's leading space).
  const size_t skip = !ids.empty() && ids[0] == tok.bos_id() ? 1 : 0;
  std::vector<int32_t> shown(ids.begin() + ptrdiff_t(skip), ids.end());
  std::string printed = tok.decode(shown);
  std::fwrite(printed.data(), 1, printed.size(), stdout);
  std::fflush(stdout);
  int64_t new_tokens = 0;
  double first_token_s = 0;
  const auto start = std::chrono::steady_clock::now();
  farthing::models::generate(decoder, ids, options, [&](int32_t token) {
    if (new_tokens++ == 0) first_token_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    shown.push_back(token);
    const std::string text = tok.decode(shown);
    if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
      std::fwrite(text.data() + printed.size(), 1, text.size() - printed.size(), stdout);
      std::fflush(stdout);
    }
    printed = text;
  });
  std::printf("\n");
  std::fflush(stdout);  // the text before the throughput line when both go to one pipe
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double decode_s = total_s - first_token_s;
  std::fprintf(stderr,
               "farthing generate: loaded %s (%lld params, fp32) in %.2f s; prompt %zu tokens + first token "
               "in %.3f s; %lld new tokens in %.3f s (%.1f tokens/s decoding)\n",
               model_path.c_str(), (long long)spec.config.num_params(), load_s, ids.size(), first_token_s,
               (long long)new_tokens, total_s,
               new_tokens > 1 ? double(new_tokens - 1) / std::max(decode_s, 1e-9) : 0.0);
  return 0;
}

namespace {

VerbRun define_generate(CLI::App& verb) {
  auto a = std::make_shared<GenerateArgs>();
  GenerationOptions& o = a->options;
  verb.add_option("--model", a->model, "HF folder or *.safetensors, *.gguf, or a llama2.c .bin")
      ->type_name("PATH")
      ->required();
  verb.add_option("--tokenizer", a->tokenizer,
                  "tokenizer.json (or its folder), tokenizer.model, tok512.bin or .gguf\n"
                  "(default: the GGUF's own, else tokenizer.json beside the model)")
      ->type_name("PATH");
  verb.add_option("--prompt", a->prompt, "text to continue (default: empty, i.e. BOS alone)")->type_name("TEXT");
  verb.add_option("--max-new-tokens", o.max_new_tokens, "most tokens to generate")
      ->type_name("N")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  verb.add_option("--temperature", o.temperature, "0: greedy; else sample softmax(logits / T)")
      ->type_name("T")
      ->capture_default_str()
      ->check(farthing::cli::non_negative_number());
  verb.add_option("--top-k", o.top_k, "sample among the K most likely tokens (0: off)")
      ->type_name("K")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  verb.add_option("--top-p", o.top_p, "sample within the smallest set of mass >= P (1: off)")
      ->type_name("P")
      ->capture_default_str();
  verb.add_option("--seed", o.seed, "draws are keyed by (seed, position)")
      ->type_name("S")
      ->capture_default_str()
      ->check(farthing::cli::whole_number_at_least(0));
  verb.add_option("--logits-out", a->logits_out,
                  "also write the next-token logits after the prompt (float32, vocab values)")
      ->type_name("FILE");
  verb.add_option("--stop", a->stop_texts,
                  "also stop at TEXT, which must be one token (repeatable); EOS always stops, and\n"
                  "BOS does for llama2.c models (as llama2.c's run)")
      ->type_name("TEXT")
      ->allow_extra_args(false);
  verb.footer("Prints the prompt and the generated text to stdout, tokens/s to stderr. The new text excludes\n"
              "the stop token that ended it.");
  return [a] { return run_generate(*a); };
}

const VerbRegistration kGenerate{"generate", "continue a prompt with a model file (KV-cache decoding)",
                                 define_generate};

}  // namespace

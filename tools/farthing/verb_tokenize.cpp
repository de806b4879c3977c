// verb_tokenize.cpp — `farthing tokenize`: text or JSONL to a token file, or ids of one text.
//
//   farthing tokenize --tokenizer PATH --ids "some text"       prints the ids, space-separated
//   farthing tokenize --tokenizer PATH INPUT.txt|INPUT.jsonl -o OUT.bin
// PATH: tokenizer.json (or its directory), SentencePiece tokenizer.model, llama2.c tok512.bin,
// or a .gguf. A .txt file is one document; a .jsonl file holds one JSON object per line, the
// document in its "text" field (--field). OUT.bin is data/token_file.h's format. Throughput
// goes to stderr. Relies on: data/tokenizer_loaders.h, data/token_file.h.
// Tested by: tests/cli/test_data_preview.sh (a chat field refused, pointing to data preview); the pieces
// by tests/tokenizers.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/token_file.h"
#include "framework/data/tokenizer_loaders.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

struct TokenizeArgs {
  std::string tokenizer, ids_text, input, output, field = "text";
  bool want_ids = false;  // --ids was given (its TEXT may be empty)
  bool bos = false, eos = false, no_special = false;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int run_tokenize(const TokenizeArgs& a) {
  const bool want_ids = a.want_ids;
  if (want_ids && !a.input.empty()) {
    throw farthing::cli::UsageError("give --ids TEXT or INPUT -o OUT.bin, not both");
  }
  if (!want_ids && (a.input.empty() || a.output.empty())) {
    throw farthing::cli::UsageError("need --ids TEXT, or INPUT and -o OUT.bin");
  }
  const std::string& tokenizer_path = a.tokenizer;
  const std::string& input = a.input;
  const std::string& output = a.output;
  const std::string& field = a.field;
  const bool bos = a.bos, eos = a.eos, parse_special = !a.no_special;
  const farthing::data::Tokenizer tok = farthing::data::load_tokenizer(tokenizer_path);
  std::vector<int32_t> ids;
  auto add_document = [&](const std::string& text) {
    if (bos) {
      FARTHING_CHECK(tok.bos_id() >= 0, "--bos: tokenizer ", tokenizer_path, " has no BOS token");
      ids.push_back(tok.bos_id());
    }
    const std::vector<int32_t> doc = tok.encode(text, parse_special);
    ids.insert(ids.end(), doc.begin(), doc.end());
    if (eos) {
      FARTHING_CHECK(tok.eos_id() >= 0, "--eos: tokenizer ", tokenizer_path, " has no EOS token");
      ids.push_back(tok.eos_id());
    }
  };
  if (want_ids) {
    add_document(a.ids_text);
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    return 0;
  }
  const std::string data = read_all(input);
  const auto start = std::chrono::steady_clock::now();
  size_t documents = 0;
  if (input.ends_with(".jsonl")) {
    std::istringstream lines(data);
    std::string line;
    for (size_t line_no = 1; std::getline(lines, line); ++line_no) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        FARTHING_FAIL(input, ":", line_no, " is not JSON: ", e.what());
      }
      // Chat messages and prompt/response pairs carry a loss mask and a template; a token file
      // holds neither, so they are shown by data preview rather than tokenized here.
      FARTHING_CHECK(!(j.is_object() && j.contains(field) && j[field].is_array()), input, ":", line_no, " field '",
                     field, "' is a list (chat messages?): tokenize writes the ids of one text field; to see chat "
                     "data rendered with its template and loss mask, run `farthing data preview RECIPE`");
      FARTHING_CHECK(j.is_object() && j.contains(field) && j[field].is_string(), input, ":", line_no,
                     " has no string field '", field, "' (choose it with --field; `farthing data preview RECIPE` "
                     "shows chat and prompt/response data as the trainer sees it)");
      add_document(j[field].get<std::string>());
      ++documents;
    }
  } else {
    add_document(data);
    documents = 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  farthing::data::write_token_file(output, ids, uint32_t(tok.vocab_size()));
  std::fprintf(stderr, "farthing tokenize: %zu document(s), %zu bytes -> %zu tokens in %.3f s (%.2f MB/s), wrote %s\n",
               documents, data.size(), ids.size(), seconds, double(data.size()) / 1e6 / std::max(seconds, 1e-9),
               output.c_str());
  return 0;
}

namespace {

VerbRun define_tokenize(CLI::App& verb) {
  auto a = std::make_shared<TokenizeArgs>();
  verb.add_option("--tokenizer", a->tokenizer,
                  "tokenizer.json (or a folder holding it), tokenizer.model, tok512.bin or .gguf")
      ->type_name("PATH")
      ->required();
  verb.add_option("--ids", a->ids_text, "print the token ids of TEXT and exit")
      ->type_name("TEXT")
      ->each([a](const std::string&) { a->want_ids = true; });
  verb.add_option("INPUT", a->input, "a .txt file (one document) or .jsonl (one document per line)");
  verb.add_option("-o,--output", a->output,
                  "token file: \"FTOK\", u32 version 1, u32 vocab_size, u32 header_bytes 24,\n"
                  "u64 n_tokens, then n_tokens u32 ids (little-endian)")
      ->type_name("OUT.bin");
  verb.add_option("--field", a->field, "JSONL field holding the document")->capture_default_str()->type_name("NAME");
  verb.add_flag("--bos", a->bos, "put BOS before every document");
  verb.add_flag("--eos", a->eos, "put EOS after every document");
  verb.add_flag("--no-special", a->no_special, "treat special-token text (\"<|endoftext|>\") as plain text");
  verb.footer("Either --ids TEXT, or INPUT -o OUT.bin (throughput on stderr).");
  return [a] { return run_tokenize(*a); };
}

const VerbRegistration kTokenize{"tokenize", "text or JSONL to token ids (tokenizer.json, tok512.bin or .gguf)",
                                 define_tokenize};

}  // namespace

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
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/token_file.h"
#include "framework/data/tokenizer_loaders.h"
#include "tools/farthing/verbs.h"

namespace {

constexpr const char* kTokenizeUsage =
    "usage: farthing tokenize --tokenizer PATH --ids TEXT\n"
    "       farthing tokenize --tokenizer PATH INPUT(.txt|.jsonl) -o OUT.bin [options]\n"
    "\n"
    "  --tokenizer PATH  tokenizer.json (or a folder holding it), tokenizer.model, tok512.bin or .gguf\n"
    "  --ids TEXT        print the token ids of TEXT and exit\n"
    "  -o OUT.bin        token file: \"FTOK\", u32 version 1, u32 vocab_size, u32 header_bytes 24,\n"
    "                    u64 n_tokens, then n_tokens u32 ids (little-endian)\n"
    "  --field NAME      JSONL field holding the document (default: text)\n"
    "  --bos / --eos     put BOS before / EOS after every document\n"
    "  --no-special      treat special-token text (\"<|endoftext|>\") as plain text\n";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args) {
  std::string tokenizer_path, ids_text, input, output, field = "text";
  bool want_ids = false, bos = false, eos = false, parse_special = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      FARTHING_CHECK(i + 1 < args.size(), "option ", a, " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kTokenizeUsage);
      return 0;
    }
    if (a == "--tokenizer") tokenizer_path = value();
    else if (a == "--ids") { ids_text = value(); want_ids = true; }
    else if (a == "-o" || a == "--output") output = value();
    else if (a == "--field") field = value();
    else if (a == "--bos") bos = true;
    else if (a == "--eos") eos = true;
    else if (a == "--no-special") parse_special = false;
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "farthing tokenize: unknown option '%s'\n\n%s", a.c_str(), kTokenizeUsage);
      return 2;
    } else if (input.empty()) input = a;
    else {
      std::fprintf(stderr, "farthing tokenize: more than one input ('%s', '%s')\n\n%s", input.c_str(), a.c_str(),
                   kTokenizeUsage);
      return 2;
    }
  }
  if (tokenizer_path.empty() || (!want_ids && (input.empty() || output.empty()))) {
    std::fprintf(stderr, "farthing tokenize: need --tokenizer and either --ids TEXT or INPUT -o OUT.bin\n\n%s",
                 kTokenizeUsage);
    return 2;
  }
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
    add_document(ids_text);
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

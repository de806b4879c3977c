// init_data.cpp — see init_data.h.
#include "tools/farthing/init_data.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "framework/data/dataset_chat.h"
#include "framework/data/dataset_documents.h"

namespace farthing::cli {

namespace fs = std::filesystem;

namespace {

// The kind of the first non-blank JSONL line, decided by the keys dataset_jsonl.h reads in the
// same order; "" when that line is not an object with one of them (the reader then says why).
std::string first_jsonl_kind(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (!row.is_object()) return "";
    if (row.contains("messages")) return "chat";
    if (row.contains("prompt") && (row.contains("response") || row.contains("completion"))) return "prompt/response";
    if (row.contains("text")) return "text";
    return "";
  }
  return "";
}

// YAML-safe text for a comment: one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// At most max_bytes of text, never ending inside a UTF-8 character.
std::string utf8_prefix(const std::string& text, size_t max_bytes) {
  size_t n = std::min(text.size(), max_bytes);
  while (n > 0 && n < text.size() && (uint8_t(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

// data.chat_template for a template found with the tokenizer: a built-in format's name, else
// "auto"; the comment says where it was found.
void name_template(const data::ChatTemplate& chat, const data::Tokenizer& tokenizer, InitData& d) {
  const fs::path source = tokenizer.spec().source;
  const fs::path dir = fs::is_directory(source) ? source : source.parent_path();
  const std::string where =
      source.extension() == ".gguf" ? source.filename().string() + "'s tokenizer.chat_template"
      : fs::is_regular_file(dir / "chat_template.jinja") ? "chat_template.jinja beside " + source.filename().string()
                                                         : "tokenizer_config.json beside " + source.filename().string();
  if (chat.format()) {
    d.chat_template = std::string(data::chat_format_name(*chat.format()));
    d.chat_template_comment = "the template in " + where + ": farthing's built-in renderer for it";
  } else {
    d.chat_template = "auto";
    d.chat_template_comment = "the template in " + where + " (rendered by the Jinja interpreter)";
  }
}

}  // namespace

InitData read_init_data(const fs::path& path, const data::Tokenizer* tokenizer, int64_t vocab_size) {
  InitData d;
  const data::DataFormat format = data::dataset_format(path, data::DataFormat::kAuto);
  if (format == data::DataFormat::kJsonl) d.kind = first_jsonl_kind(path);
  if (d.kind.empty()) d.kind = format == data::DataFormat::kTokens ? "token file" : format == data::DataFormat::kJsonl ? "text" : "text file";
  d.add_bos_comment = "BOS before each document, as in pre-training";
  d.add_eos_comment = "EOS after each document, so the model learns where documents end";
  d.chat_template_comment = "used by JSONL \"messages\" lines only: auto = the tokenizer's own template";
  d.packing_comment = "one stream cut into sequences: text runs on across document ends, as in pre-training";
  if (d.kind == "chat" || d.kind == "prompt/response") {
    d.packing = data::Packing::kDocuments;
    d.packing_comment = "each example sees only itself, positions restarting at its start, as it will at inference; "
                        "several share a sequence, the last one padded";
  }

  if (d.kind == "chat") {
    FARTHING_CHECK(tokenizer != nullptr, "init: ", path.string(), " holds chat messages but no tokenizer is known");
    const data::ChatTemplate chat = data::resolve_chat_template("auto", *tokenizer);
    name_template(chat, *tokenizer, d);
    const std::string bos_text = tokenizer->bos_id() >= 0 ? tokenizer->token_bytes(tokenizer->bos_id()) : "";
    const std::vector<data::ChatMessage> probe = {{"user", "Hi"}, {"assistant", "Hello"}};
    const std::string rendered = chat.render(probe, false, bos_text.empty() ? "<|begin_of_text|>" : bos_text);
    const bool template_prints_bos = !bos_text.empty() && rendered.starts_with(bos_text);
    d.add_bos = false;
    d.add_bos_comment = one_line(template_prints_bos
                                     ? "the template starts each conversation with " + bos_text + " itself"
                                     : "the template opens each conversation itself (\"" + utf8_prefix(rendered, 12) +
                                           "...\") and apply_chat_template adds no BOS at inference, so none here");
    d.add_eos = false;
    d.add_eos_comment = "each assistant turn ends with " + std::string(chat.end_of_turn()) +
                        ", which is trained and teaches the model to stop; an EOS after the conversation "
                        "would be one more token that no inference prompt has";
  } else if (d.kind == "prompt/response") {
    FARTHING_CHECK(tokenizer != nullptr, "init: ", path.string(), " holds prompts but no tokenizer is known");
    d.add_bos = tokenizer->spec().add_bos;
    d.add_bos_comment = d.add_bos ? "the tokenizer puts BOS before what it encodes, so inference prompts start with it"
                                  : "the tokenizer adds no BOS when it encodes, so inference prompts have none";
    d.add_eos = true;
    d.add_eos_comment = "EOS after each response is trained: the model learns to stop there";
    // The tokenizer's template, when it has one, is written down for "messages" lines; these
    // lines do not go through it.
    try {
      name_template(data::resolve_chat_template("auto", *tokenizer), *tokenizer, d);
    } catch (const Error&) {
      d.chat_template = "auto";
    }
    d.chat_template_comment = (d.chat_template_comment.starts_with("the template in")
                                   ? d.chat_template_comment + "; "
                                   : std::string()) +
                              "prompt/response lines are joined as they are, not rendered through a template "
                              "(\"messages\" lines would be)";
  }

  data::DatasetOptions options;
  options.add_bos = d.add_bos;
  options.add_eos = d.add_eos;
  options.chat_template = d.chat_template;
  d.documents.source = path.string();
  data::for_each_document(path, options, tokenizer, vocab_size, [&](const data::DataDocument& doc) {
    d.documents.lengths.push_back(int64_t(doc.tokens.size()));
    d.documents.lines.push_back(doc.line);
  });
  FARTHING_CHECK(!d.documents.lengths.empty(), "init: ", path.string(), " holds no document (only blank lines?)");
  return d;
}

}  // namespace farthing::cli

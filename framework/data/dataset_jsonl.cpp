// dataset_jsonl.cpp — see dataset_jsonl.h.
#include "framework/data/dataset_jsonl.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/dataset_chat.h"

namespace farthing::data {

namespace {

using nlohmann::json;

constexpr const char* kExpectedKeys =
    "\"text\", \"prompt\" + \"response\" (or \"completion\"), or \"messages\": [{\"role\", \"content\"}, ...]";

void append_encoded(JsonlDocument& doc, const Tokenizer& tokenizer, std::string_view text, bool parse_special,
                    bool trained) {
  const std::vector<int32_t> ids = tokenizer.encode(text, parse_special);
  doc.tokens.insert(doc.tokens.end(), ids.begin(), ids.end());
  doc.loss_mask.insert(doc.loss_mask.end(), ids.size(), trained ? 1 : 0);
}

const std::string& string_field(const json& object, const char* key) {
  const json& value = object.at(key);
  FARTHING_CHECK(value.is_string(), "\"", key, "\" is ", value.type_name(), "; expected a string");
  return value.get_ref<const std::string&>();
}

std::vector<ChatMessage> chat_messages(const json& messages) {
  FARTHING_CHECK(messages.is_array(), "\"messages\" is ", messages.type_name(),
                 "; expected a list of {\"role\", \"content\"} objects");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    FARTHING_CHECK(m.is_object() && m.contains("role") && m.contains("content") && m["role"].is_string() &&
                       m["content"].is_string(),
                   "message ", i, " is ", m.dump().substr(0, 200),
                   "; expected {\"role\": string, \"content\": string}");
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return out;
}

std::string keys_of(const json& object) {
  std::string keys;
  for (const auto& [key, value] : object.items()) keys += (keys.empty() ? "" : ", ") + key;
  return keys.empty() ? "none" : keys;
}

// One line's document; throws without a location (the caller adds file:line).
JsonlDocument jsonl_document(std::string_view line, const Tokenizer& tokenizer, const DatasetOptions& options,
                        std::optional<ChatTemplate>& chat_format) {
  json row;
  try {
    row = json::parse(line);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers past double
    FARTHING_FAIL("not valid JSON (", e.what(), "); expected one object per line with ", kExpectedKeys);
  }
  FARTHING_CHECK(row.is_object(), "a JSON ", row.type_name(), ", not an object; expected an object with ",
                 kExpectedKeys);

  const int32_t bos = options.add_bos ? tokenizer.bos_id() : -1;
  const int32_t eos = options.add_eos ? tokenizer.eos_id() : -1;
  JsonlDocument doc;
  if (row.contains("messages")) {
    doc.kind = "messages";
    const std::vector<ChatMessage> messages = chat_messages(row["messages"]);
    if (!chat_format) chat_format = resolve_chat_template(options.chat_template, tokenizer);
    const std::string bos_text = tokenizer.bos_id() >= 0 ? tokenizer.token_bytes(tokenizer.bos_id()) : "<|begin_of_text|>";
    for (const ChatPiece& piece : chat_training_pieces(*chat_format, messages, bos_text)) {
      append_encoded(doc, tokenizer, piece.text, /*parse_special=*/true, piece.trained);
    }
    const bool starts_with_bos = !doc.tokens.empty() && doc.tokens[0] == tokenizer.bos_id();
    doc.ends = {starts_with_bos ? -1 : bos, false, eos, false};
  } else if (row.contains("prompt") && (row.contains("response") || row.contains("completion"))) {
    doc.kind = "prompt/response";
    append_encoded(doc, tokenizer, string_field(row, "prompt"), false, false);
    const char* response_key = row.contains("response") ? "response" : "completion";
    FARTHING_CHECK(!string_field(row, response_key).empty(), "has an empty \"", response_key,
                   "\": an empty document, nothing to train on; remove the line or give it a ", response_key);
    append_encoded(doc, tokenizer, string_field(row, response_key), false, true);
    doc.ends = {bos, false, eos, true};
  } else if (row.contains("text")) {
    doc.kind = "text";
    FARTHING_CHECK(!string_field(row, "text").empty(), "has an empty \"text\": an empty document, nothing to "
                   "train on; remove the line or give it text");
    append_encoded(doc, tokenizer, string_field(row, "text"), false, true);
    doc.ends = {bos, true, eos, true};
  } else if (row.contains("prompt")) {
    FARTHING_FAIL("has \"prompt\" but no \"response\" (or \"completion\"); expected ", kExpectedKeys);
  } else {
    FARTHING_FAIL("has none of the expected keys (it has: ", keys_of(row), "); expected ", kExpectedKeys);
  }
  return doc;
}

}  // namespace

void for_each_jsonl_document(const std::filesystem::path& path, const Tokenizer& tokenizer,
                             const DatasetOptions& options, int64_t vocab_size,
                             const std::function<void(const JsonlDocument&)>& visit) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open JSONL file ", path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  std::optional<ChatTemplate> chat_format;  // resolved at the first "messages" line
  size_t at = 0;
  for (int64_t line_number = 1; at < text.size(); ++line_number) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line

    const std::string where = path.string() + ":" + std::to_string(line_number);
    JsonlDocument doc;
    try {
      doc = jsonl_document(line, tokenizer, options, chat_format);
    } catch (const Error& e) {
      FARTHING_FAIL(where, ": ", e.what());
    }
    check_token_ids(doc.tokens, vocab_size, where);
    if (doc.ends.bos_id >= 0) check_token_ids({&doc.ends.bos_id, 1}, vocab_size, where + " (BOS)");
    if (doc.ends.eos_id >= 0) check_token_ids({&doc.ends.eos_id, 1}, vocab_size, where + " (EOS)");
    doc.line = line_number;
    visit(doc);
  }
}

void read_jsonl_documents(const std::filesystem::path& path, const Tokenizer& tokenizer, const DatasetOptions& options,
                          int64_t vocab_size, TokenStream& stream) {
  for_each_jsonl_document(path, tokenizer, options, vocab_size, [&](const JsonlDocument& doc) {
    append_document(stream, doc.tokens, doc.loss_mask, doc.ends, doc.line);
    if (std::string_view(doc.kind) != "text") stream.examples = true;
  });
}

}  // namespace farthing::data

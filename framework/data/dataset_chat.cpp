// dataset_chat.cpp — see dataset_chat.h.
#include "framework/data/dataset_chat.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/ckpt/gguf.h"
#include "framework/core/error.h"

namespace farthing::data {

namespace fs = std::filesystem;

namespace {

// Stands in for an assistant message's content to find where the content starts. Control bytes
// keep it out of real text (checked) and unchanged by Llama-3's trim.
constexpr std::string_view kContentSentinel = "\x01\x02" "farthing-assistant-content" "\x02\x01";

constexpr std::string_view kFormatNames = "llama3, llama3_instruct, qwen2_5, smollm2, chatml";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot open chat template file ", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The "chat_template" of a tokenizer_config.json: a string, or a list of {name, template}
// (HF's multi-template form: the one named "default", else the first).
std::string template_from_config(const fs::path& path) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    FARTHING_FAIL(path.string(), " is not valid JSON: ", e.what());
  }
  FARTHING_CHECK(config.is_object() && config.contains("chat_template"), path.string(),
                 " has no \"chat_template\" key; expected the Jinja chat template there");
  const nlohmann::json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  // Only string values are read: value("name", "") and get<std::string>() throw json errors that
  // name neither the file nor the key on anything else.
  auto template_of = [](const nlohmann::json& entry) -> const nlohmann::json* {
    if (!entry.is_object() || !entry.contains("template") || !entry["template"].is_string()) return nullptr;
    return &entry["template"];
  };
  if (t.is_array()) {
    for (const nlohmann::json& entry : t) {
      if (template_of(entry) && entry.contains("name") && entry["name"] == "default") {
        return template_of(entry)->get<std::string>();
      }
    }
    if (!t.empty() && template_of(t[0])) return template_of(t[0])->get<std::string>();
  }
  FARTHING_FAIL(path.string(), ": \"chat_template\" is neither a string nor a list of {name, template} with a "
                "string template");
}

std::optional<ChatFormat> format_from_name(const std::string& name) {
  if (name == "llama3") return ChatFormat::kLlama3;
  if (name == "llama3_instruct") return ChatFormat::kLlama3Instruct;
  if (name == "qwen2_5") return ChatFormat::kQwen2_5;
  if (name == "smollm2") return ChatFormat::kSmolLM2;
  if (name == "chatml") return ChatFormat::kChatML;
  return std::nullopt;
}

// "auto": the template shipped with the tokenizer's own files.
ChatFormat format_from_tokenizer_files(const Tokenizer& tokenizer) {
  const fs::path source = tokenizer.spec().source;
  if (source.extension() == ".gguf" && fs::is_regular_file(source)) {
    const std::string jinja = ckpt::GgufFile(source).get_string("tokenizer.chat_template");
    FARTHING_CHECK(!jinja.empty(), "JSONL \"messages\" need a chat template, but ", source.string(),
                   " has no tokenizer.chat_template; set chat_template to one of ", kFormatNames,
                   " or to a tokenizer_config.json / Jinja file");
    return detect_chat_format(jinja);
  }
  const fs::path dir = fs::is_directory(source) ? source : source.parent_path();
  const fs::path config = dir / "tokenizer_config.json";
  FARTHING_CHECK(!source.empty() && fs::exists(source) && fs::is_regular_file(config), "JSONL \"messages\" need a chat template, but there is no ",
                 config.string(), " beside tokenizer '", source.string(), "'; set chat_template to one of ",
                 kFormatNames, " or to a tokenizer_config.json / Jinja file");
  return detect_chat_format(template_from_config(config));
}

}  // namespace

std::string_view chat_end_of_turn(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama3Instruct:
      return "<|eot_id|>";
    case ChatFormat::kQwen2_5:
    case ChatFormat::kSmolLM2:
    case ChatFormat::kChatML:
      return "<|im_end|>";
  }
  FARTHING_FAIL("unknown chat format ", int(format));
}

ChatFormat resolve_chat_format(const std::string& setting, const Tokenizer& tokenizer) {
  ChatFormat format = ChatFormat::kChatML;
  if (setting.empty() || setting == "auto") {
    format = format_from_tokenizer_files(tokenizer);
  } else if (const std::optional<ChatFormat> named = format_from_name(setting)) {
    format = *named;
  } else {
    const fs::path path = setting;
    FARTHING_CHECK(fs::is_regular_file(path), "chat_template '", setting, "' is neither auto, a format name (",
                   kFormatNames, ") nor an existing tokenizer_config.json / Jinja file");
    format = detect_chat_format(path.extension() == ".json" ? template_from_config(path) : read_text(path));
  }
  const std::string_view eot = chat_end_of_turn(format);
  FARTHING_CHECK(tokenizer.encode(eot, /*parse_special=*/true).size() == 1, "the chat template ends turns with ",
                 eot, ", but tokenizer '", tokenizer.spec().source,
                 "' has no such token (it would be split into text pieces); use the model's own tokenizer");
  return format;
}

std::vector<ChatPiece> chat_training_pieces(ChatFormat format, std::span<const ChatMessage> messages,
                                            const std::string& bos_token) {
  FARTHING_CHECK(!messages.empty(), "\"messages\" is empty; expected at least one {role, content}");
  for (const ChatMessage& m : messages) {
    FARTHING_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool",
                   "message role '", m.role, "'; expected system, user, assistant or tool");
    FARTHING_CHECK(m.content.find(kContentSentinel) == std::string::npos,
                   "a message contains farthing's internal content marker");
  }
  const std::string full = render_chat(format, messages, /*add_generation_prompt=*/false, bos_token);
  const std::string_view eot = chat_end_of_turn(format);

  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) byte ranges of `full`
  std::vector<ChatMessage> prefix;
  for (size_t i = 0; i < messages.size(); ++i) {
    prefix.push_back(messages[i]);
    if (messages[i].role != "assistant") continue;
    prefix.back().content = std::string(kContentSentinel);
    const std::string marked = render_chat(format, prefix, false, bos_token);
    prefix.back().content = messages[i].content;
    const std::string upto = render_chat(format, prefix, false, bos_token);

    const size_t begin = marked.find(kContentSentinel);
    const size_t eot_at = upto.rfind(eot);
    FARTHING_CHECK(begin != std::string::npos && full.compare(0, begin, marked, 0, begin) == 0 &&
                       eot_at != std::string::npos && eot_at >= begin,
                   "cannot locate assistant message ", i, " in the rendered conversation (the chat template is not "
                   "prefix-stable, so its loss mask cannot be derived)");
    const size_t end = eot_at + eot.size();
    FARTHING_CHECK(full.compare(0, end, upto, 0, end) == 0 && (spans.empty() || begin >= spans.back().second),
                   "assistant message ", i, " renders differently once later messages follow (the chat template "
                   "is not prefix-stable, so its loss mask cannot be derived)");
    spans.emplace_back(begin, end);
  }

  std::vector<ChatPiece> pieces;
  size_t at = 0;
  for (const auto& [begin, end] : spans) {
    if (begin > at) pieces.push_back({full.substr(at, begin - at), false});
    pieces.push_back({full.substr(begin, end - begin), true});
    at = end;
  }
  if (at < full.size()) pieces.push_back({full.substr(at), false});
  return pieces;
}

}  // namespace farthing::data

// dataset_chat.cpp — see dataset_chat.h.
#include "framework/data/dataset_chat.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
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

}  // namespace

std::string_view chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama3Instruct: return "llama3_instruct";
    case ChatFormat::kQwen2_5: return "qwen2_5";
    case ChatFormat::kSmolLM2: return "smollm2";
    case ChatFormat::kChatML: return "chatml";
  }
  return "?";
}

namespace {

std::optional<ChatFormat> format_from_name(const std::string& name) {
  if (name == "llama3") return ChatFormat::kLlama3;
  if (name == "llama3_instruct") return ChatFormat::kLlama3Instruct;
  if (name == "qwen2_5") return ChatFormat::kQwen2_5;
  if (name == "smollm2") return ChatFormat::kSmolLM2;
  if (name == "chatml") return ChatFormat::kChatML;
  return std::nullopt;
}

// A template's text and the name errors give its source.
struct TemplateText {
  std::string text;
  std::string source;
};

// "auto": the template shipped with the tokenizer's own files.
TemplateText template_from_tokenizer_files(const Tokenizer& tokenizer) {
  const fs::path source = tokenizer.spec().source;
  if (source.extension() == ".gguf" && fs::is_regular_file(source)) {
    std::string jinja = ckpt::GgufFile(source).get_string("tokenizer.chat_template");
    FARTHING_CHECK(!jinja.empty(), "JSONL \"messages\" need a chat template, but ", source.string(),
                   " has no tokenizer.chat_template; set chat_template to one of ", kFormatNames,
                   ", to a tokenizer_config.json / Jinja file or to an inline Jinja template");
    return {std::move(jinja), source.string() + " (tokenizer.chat_template)"};
  }
  const fs::path dir = fs::is_directory(source) ? source : source.parent_path();
  // transformers' newer save_pretrained keeps the template in its own file beside the config.
  const fs::path jinja_file = dir / "chat_template.jinja";
  if (!source.empty() && fs::exists(source) && fs::is_regular_file(jinja_file)) {
    return {read_text(jinja_file), jinja_file.string()};
  }
  const fs::path config = dir / "tokenizer_config.json";
  FARTHING_CHECK(!source.empty() && fs::exists(source) && fs::is_regular_file(config), "JSONL \"messages\" need a chat template, but there is no ",
                 config.string(), " beside tokenizer '", source.string(), "'; set chat_template to one of ",
                 kFormatNames, ", to a tokenizer_config.json / Jinja file or to an inline Jinja template");
  return {template_from_config(config), config.string() + " (\"chat_template\")"};
}

// Text for messages: control bytes shown as escapes, cut to a readable length.
std::string shown(std::string_view text, size_t max_bytes = 60) {
  std::string out;
  for (char c : text.substr(0, max_bytes)) {
    if (c == '\n') out += "\\n";
    else if (uint8_t(c) < 0x20) out += "\\x" + std::string(1, "0123456789abcdef"[uint8_t(c) >> 4]) + "0123456789abcdef"[c & 15];
    else out += c;
  }
  return text.size() > max_bytes ? out + "..." : out;
}

std::string text_of(const Tokenizer& tokenizer, int32_t id) { return id >= 0 ? tokenizer.token_bytes(id) : ""; }

// The end-of-turn text of an interpreted template (dataset_chat.h): the longest special token
// (or the BOS/EOS text) that starts what the template emits right after an assistant message.
std::string interpreted_end_of_turn(const JinjaTemplate& jinja, const Tokenizer& tokenizer) {
  const std::string bos = text_of(tokenizer, tokenizer.bos_id());
  const std::string eos = text_of(tokenizer, tokenizer.eos_id());
  // A template may insist on a system message or alternating roles (raise_exception): the
  // second probe starts with a system message.
  const std::vector<std::vector<ChatMessage>> probes = {
      {{"user", "Hi"}, {"assistant", std::string(kContentSentinel)}},
      {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", std::string(kContentSentinel)}}};
  std::string rendered;
  for (size_t k = 0; k < probes.size(); ++k) {
    try {
      rendered = jinja.render(probes[k], /*add_generation_prompt=*/false, bos, eos);
      break;
    } catch (const Error& e) {
      if (k + 1 == probes.size()) {
        FARTHING_FAIL("rendering a [system,] user, assistant conversation to find the end-of-turn token: ", e.what());
      }
    }
  }
  const size_t at = rendered.find(kContentSentinel);
  FARTHING_CHECK(at != std::string::npos, "chat template ", jinja.source(), " does not render an assistant message's "
                 "content as it is (a user, assistant conversation rendered as \"", shown(rendered, 120),
                 "\"), so the trained span cannot be found");
  const std::string_view after = std::string_view(rendered).substr(at + kContentSentinel.size());
  std::vector<std::string> candidates = {bos, eos};
  for (const AddedToken& token : tokenizer.spec().added_tokens) {
    if (token.special) candidates.push_back(token.content);
  }
  std::string best;
  for (const std::string& c : candidates) {
    if (!c.empty() && c.size() > best.size() && after.substr(0, c.size()) == c &&
        tokenizer.encode(c, /*parse_special=*/true).size() == 1) {
      best = c;
    }
  }
  FARTHING_CHECK(!best.empty(), "chat template ", jinja.source(), ": right after an assistant message's content it emits \"",
                 shown(after), "\", which does not start with a special token of tokenizer '", tokenizer.spec().source,
                 "'; the end-of-turn token (<|im_end|>, <|eot_id|>, </s>, ...) must follow the content directly, "
                 "as it is trained with it");
  return best;
}

// Without throwing: an inline template is no file name, and may be too long to be one.
bool is_existing_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// A built-in format, once its end-of-turn marker is known to be one token of the tokenizer.
ChatTemplate built_in(ChatFormat format, const Tokenizer& tokenizer) {
  const std::string_view eot = chat_end_of_turn(format);
  FARTHING_CHECK(tokenizer.encode(eot, /*parse_special=*/true).size() == 1, "the chat template ends turns with ",
                 eot, ", but tokenizer '", tokenizer.spec().source,
                 "' has no such token (it would be split into text pieces); use the model's own tokenizer");
  return ChatTemplate(format);
}

// A template text: its built-in format when detect_chat_format recognises it, else interpreted.
ChatTemplate template_from_text(const TemplateText& t, const Tokenizer& tokenizer) {
  if (const std::optional<ChatFormat> format = find_chat_format(t.text)) return built_in(*format, tokenizer);
  JinjaTemplate jinja(t.text, t.source);
  std::string end_of_turn = interpreted_end_of_turn(jinja, tokenizer);
  return ChatTemplate(std::move(jinja), std::move(end_of_turn), text_of(tokenizer, tokenizer.bos_id()),
                      text_of(tokenizer, tokenizer.eos_id()));
}

}  // namespace

ChatTemplate::ChatTemplate(JinjaTemplate jinja, std::string end_of_turn, std::string bos_token, std::string eos_token)
    : jinja_(std::move(jinja)),
      end_of_turn_(std::move(end_of_turn)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)) {}

std::string_view ChatTemplate::end_of_turn() const {
  return format_ ? chat_end_of_turn(*format_) : std::string_view(end_of_turn_);
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                 const std::string& bos_token) const {
  if (format_) return render_chat(*format_, messages, add_generation_prompt, bos_token);
  return jinja_->render(messages, add_generation_prompt, bos_token_, eos_token_);
}

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

ChatTemplate resolve_chat_template(const std::string& setting, const Tokenizer& tokenizer) {
  if (const std::optional<ChatFormat> named = format_from_name(setting)) return built_in(*named, tokenizer);
  TemplateText text;
  if (setting.empty() || setting == "auto") {
    text = template_from_tokenizer_files(tokenizer);
  } else if (const fs::path path = setting; is_existing_file(path)) {
    text = path.extension() == ".json" ? TemplateText{template_from_config(path), path.string() + " (\"chat_template\")"}
                                       : TemplateText{read_text(path), path.string()};
  } else {
    FARTHING_CHECK(setting.find("{%") != std::string::npos || setting.find("{{") != std::string::npos,
                   "chat_template '", shown(setting), "' is neither auto, a format name (", kFormatNames,
                   "), an existing tokenizer_config.json / Jinja file, nor an inline Jinja template (one with {% ... %} "
                   "or {{ ... }})");
    text = {setting, "data.chat_template"};
  }
  return template_from_text(text, tokenizer);
}

ChatFormat resolve_chat_format(const std::string& setting, const Tokenizer& tokenizer) {
  const ChatTemplate chat_template = resolve_chat_template(setting, tokenizer);
  FARTHING_CHECK(chat_template.format(), "chat_template '", shown(setting), "' is not one of the built-in formats (",
                 kFormatNames, "); it renders through the Jinja interpreter (resolve_chat_template)");
  return *chat_template.format();
}

std::vector<ChatPiece> chat_training_pieces(ChatFormat format, std::span<const ChatMessage> messages,
                                            const std::string& bos_token) {
  return chat_training_pieces(ChatTemplate(format), messages, bos_token);
}

std::vector<ChatPiece> chat_training_pieces(const ChatTemplate& chat_template, std::span<const ChatMessage> messages,
                                            const std::string& bos_token) {
  FARTHING_CHECK(!messages.empty(), "\"messages\" is empty; expected at least one {role, content}");
  for (const ChatMessage& m : messages) {
    FARTHING_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool",
                   "message role '", m.role, "'; expected system, user, assistant or tool");
    FARTHING_CHECK(m.content.find(kContentSentinel) == std::string::npos,
                   "a message contains farthing's internal content marker");
  }
  const std::string full = chat_template.render(messages, /*add_generation_prompt=*/false, bos_token);
  const std::string_view eot = chat_template.end_of_turn();

  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) byte ranges of `full`
  // A template whose turns render differently once a later user message follows (Qwen3's drops
  // the think block of earlier turns) is not prefix-stable. Its message i is located in the whole
  // conversation instead, rendered again with that content replaced by the marker: everything
  // before the marker and everything after it must be the real rendering's, the content shown as
  // it is between them and followed by the end-of-turn. nullopt where that does not hold.
  const auto locate_in_whole = [&](size_t i) -> std::optional<std::pair<size_t, size_t>> {
    std::vector<ChatMessage> marked_messages(messages.begin(), messages.end());
    marked_messages[i].content = std::string(kContentSentinel);
    const std::string marked = chat_template.render(marked_messages, false, bos_token);
    const size_t begin = marked.find(kContentSentinel);
    if (begin == std::string::npos || marked.find(kContentSentinel, begin + 1) != std::string::npos) return std::nullopt;
    const std::string& content = messages[i].content;
    const std::string_view after = std::string_view(marked).substr(begin + kContentSentinel.size());
    if (full.size() != begin + content.size() + after.size() || full.compare(0, begin, marked, 0, begin) != 0 ||
        full.compare(begin, content.size(), content) != 0 || after.substr(0, eot.size()) != eot ||
        std::string_view(full).substr(begin + content.size()) != after) {
      return std::nullopt;
    }
    return std::make_pair(begin, begin + content.size() + eot.size());
  };
  // A turn whose content the template rewrites (Qwen3's moves a reasoning trace, <think>…</think>
  // at the content's start, into its think block, and drops it from turns before the last user
  // message) is not shown as it is. Its span is then what the model generates after the
  // generation prompt: from the end of the conversation before it, rendered with
  // add_generation_prompt, to the first end-of-turn after that. nullopt where the whole
  // conversation does not start with that prompt.
  const auto locate_after_prompt = [&](size_t i) -> std::optional<std::pair<size_t, size_t>> {
    if (i == 0) return std::nullopt;
    const std::vector<ChatMessage> before(messages.begin(), messages.begin() + std::ptrdiff_t(i));
    const std::string prompt = chat_template.render(before, /*add_generation_prompt=*/true, bos_token);
    if (full.compare(0, prompt.size(), prompt) != 0) return std::nullopt;
    const size_t eot_at = full.find(eot, prompt.size());
    if (eot_at == std::string::npos) return std::nullopt;
    return std::make_pair(prompt.size(), eot_at + eot.size());
  };
  std::vector<ChatMessage> prefix;
  for (size_t i = 0; i < messages.size(); ++i) {
    prefix.push_back(messages[i]);
    if (messages[i].role != "assistant") continue;
    if (!chat_template.format()) {
      // Interpreted: prefix-stable templates are cut as below; the others in the whole conversation.
      std::vector<ChatMessage> upto_marked = prefix;
      upto_marked.back().content = std::string(kContentSentinel);
      const std::string marked = chat_template.render(upto_marked, false, bos_token);
      const size_t begin = marked.find(kContentSentinel);
      if (begin != std::string::npos && full.compare(0, begin, marked, 0, begin) != 0) {
        if (const auto span = locate_in_whole(i); span && (spans.empty() || span->first >= spans.back().second)) {
          spans.push_back(*span);
          continue;
        }
      }
      if (begin != std::string::npos && full.compare(0, begin, marked, 0, begin) != 0) {
        if (const auto span = locate_after_prompt(i);
            span && (spans.empty() || span->first >= spans.back().second)) {
          spans.push_back(*span);
          continue;
        }
      }
    }
    prefix.back().content = std::string(kContentSentinel);
    const std::string marked = chat_template.render(prefix, false, bos_token);
    prefix.back().content = messages[i].content;
    const std::string upto = chat_template.render(prefix, false, bos_token);

    const size_t begin = marked.find(kContentSentinel);
    size_t end = 0;
    if (chat_template.format()) {
      const size_t eot_at = upto.rfind(eot);
      FARTHING_CHECK(begin != std::string::npos && full.compare(0, begin, marked, 0, begin) == 0 &&
                         eot_at != std::string::npos && eot_at >= begin,
                     "cannot locate assistant message ", i, " in the rendered conversation (the chat template is not "
                     "prefix-stable, so its loss mask cannot be derived)");
      end = eot_at + eot.size();
    } else {
      // The trailer (what follows the content) starts with the end-of-turn and, content-independent,
      // also ends the real render: the content ends where the trailer begins.
      FARTHING_CHECK(begin != std::string::npos && marked.find(kContentSentinel, begin + 1) == std::string::npos,
                     "the chat template does not render assistant message ", i, "'s content exactly once as it is, "
                     "so its loss mask cannot be derived");
      const std::string_view trailer = std::string_view(marked).substr(begin + kContentSentinel.size());
      FARTHING_CHECK(trailer.substr(0, eot.size()) == eot, "the chat template follows assistant message ", i,
                     "'s content with \"", shown(trailer), "\", not with its end-of-turn token ", eot,
                     ", so the loss mask cannot be derived");
      FARTHING_CHECK(full.compare(0, begin, marked, 0, begin) == 0 && upto.size() >= begin + trailer.size() &&
                         upto.compare(upto.size() - trailer.size(), trailer.size(), trailer) == 0,
                     "cannot locate assistant message ", i, " in the rendered conversation (the chat template is not "
                     "prefix-stable, or what follows the content depends on the content, so its loss mask cannot be "
                     "derived)");
      end = upto.size() - trailer.size() + eot.size();
    }
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

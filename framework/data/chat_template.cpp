// chat_template.cpp — see chat_template.h.
#include "framework/data/chat_template.h"

#include "framework/core/error.h"

namespace farthing::data {

namespace {

// Jinja's trim (Python str.strip()) for ASCII whitespace.
std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string chatml(const ChatMessage& m) { return "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n"; }

}  // namespace

std::optional<ChatFormat> find_chat_format(const std::string& t) {
  if (t.find("<|start_header_id|>") != std::string::npos) {
    return t.find("add_generation_prompt") != std::string::npos ? ChatFormat::kLlama3Instruct : ChatFormat::kLlama3;
  }
  if (t.find("You are Qwen, created by Alibaba Cloud") != std::string::npos) return ChatFormat::kQwen2_5;
  if (t.find("named SmolLM") != std::string::npos) return ChatFormat::kSmolLM2;
  // Qwen3's ChatML shows an assistant's reasoning in a think block of its own: plain ChatML
  // would drop that, so such a template is left to the Jinja interpreter.
  if (t.find("<|im_start|>") != std::string::npos && t.find("</think>") == std::string::npos) return ChatFormat::kChatML;
  return std::nullopt;
}

ChatFormat detect_chat_format(const std::string& t) {
  if (const std::optional<ChatFormat> format = find_chat_format(t)) return *format;
  FARTHING_FAIL("unknown chat template (looked for Llama-3's <|start_header_id|>, Qwen's default system prompt, "
                "SmolLM's, and ChatML's <|im_start|>); it begins: ", t.substr(0, 120));
}

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                        const std::string& bos_token) {
  std::string out;
  switch (format) {
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama3Instruct:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) out += bos_token;
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) +
               "<|eot_id|>";
      }
      if (format == ChatFormat::kLlama3 || add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::kQwen2_5:
      FARTHING_CHECK(!messages.empty(), "the Qwen2.5 chat template needs at least one message");
      if (messages[0].role == "system") {
        out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
      } else {
        out += "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n";
      }
      for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user" || (m.role == "system" && i != 0) || m.role == "assistant") {
          out += chatml(m);
        } else if (m.role == "tool") {
          if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
          out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
          if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
        }
      }
      break;
    case ChatFormat::kSmolLM2:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0 && messages[0].role != "system") {
          out += "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";
        }
        out += chatml(messages[i]);
      }
      break;
    case ChatFormat::kChatML:
      for (const ChatMessage& m : messages) out += chatml(m);
      break;
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace farthing::data

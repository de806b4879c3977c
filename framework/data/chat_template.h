// chat_template.h — built-in renderers for the chat templates of the common families, so
// prompts can be built without a Jinja engine (the fast path; any other template goes through
// the Jinja interpreter, jinja_template.h). Each reproduces its template's output exactly
// (checked against jinja2 rendering the template text itself: tests/tokenizers/test_chat_template.cpp).
//
//  kLlama3   Llama-3 base tokenizer_config.json: bos + per message
//            "<|start_header_id|>ROLE<|end_header_id|>\n\n" + trim(content) + "<|eot_id|>", then
//            the assistant header — always, as this template has no add_generation_prompt test
//            (Llama-3-Instruct's template has one; detect_chat_format tells them apart).
//  kQwen2_5  ChatML with Qwen's default system prompt when the first message is not a system one,
//            tool messages wrapped in <tool_response> (tool *definitions* are not supported).
//  kSmolLM2  ChatML with SmolLM's default system prompt (the template in SmolLM2's GGUF).
//  kChatML   plain ChatML: "<|im_start|>ROLE\n" + content + "<|im_end|>\n" per message. A ChatML
//            template with think blocks (Qwen3's: "</think>" in its text) is not plain ChatML: the
//            interpreter renders it.
// Relies on: nothing. Tested by: tests/tokenizers/test_chat_template.cpp.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace farthing::data {

enum class ChatFormat { kLlama3, kLlama3Instruct, kQwen2_5, kSmolLM2, kChatML };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
};

// The format a Jinja chat template implements, recognised by its distinctive text; throws
// naming what was looked for when the template is none of the known ones.
ChatFormat detect_chat_format(const std::string& jinja_template);
// The same, nullopt when the template is none of the known ones.
std::optional<ChatFormat> find_chat_format(const std::string& jinja_template);

// bos_token is used by the Llama-3 formats only.
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, bool add_generation_prompt,
                        const std::string& bos_token = "<|begin_of_text|>");

}  // namespace farthing::data

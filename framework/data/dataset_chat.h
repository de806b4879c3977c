// dataset_chat.h — a conversation rendered with its chat template for training: the text cut
// into pieces, each marked trained (assistant content and its end-of-turn token) or not.
//
// The template (data.chat_template) renders through a built-in renderer when it is one of the
// known formats (chat_template.h: the fast path), else through the Jinja interpreter
// (jinja_template.h), parsed when the template is resolved so a bad one fails at load.
//
// How the assistant spans are found, without knowing each template's layout:
//   full = render(all messages, add_generation_prompt = false).
//   For assistant message i:
//     start: render messages[0..i] with message i's content replaced by a sentinel string; the
//            span starts where the sentinel is (right after the assistant header).
//     end:   render messages[0..i] with the real content. Built-in formats: the span ends after
//            the LAST end-of-turn marker ("<|im_end|>", "<|eot_id|>") in it, i.e. the one that
//            closes message i (a marker typed inside the content cannot be the last one).
//            Interpreted templates: the text the sentinel render has after the sentinel (the
//            "trailer") must start with the end-of-turn text and must also end the real render;
//            the span ends after the end-of-turn that starts the trailer.
//   Both renders must be prefixes of `full` up to those points (every built-in template is
//   prefix-stable); otherwise the conversation is refused rather than masked wrongly. Text after
//   the marker (ChatML's "\n", Llama-3 base's trailing assistant header) stays untrained.
// An interpreted template's end-of-turn text is worked out once, at resolve time: render
// [user, assistant(sentinel)] and take the longest special token of the tokenizer that the text
// right after the sentinel starts with ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "</s>", ...).
// A template that puts no special token right after the assistant content is refused, naming
// what it emits there.
// The pieces are encoded separately (dataset_jsonl.cpp): the cut before the content is exactly
// where generation starts at inference (the prompt ends with the assistant header), and the cut
// after the marker is at a special token, where the tokenizer splits anyway.
// NOTE: a SentencePiece tokenizer with a dummy prefix would put "▁" before each piece; every
// built-in format belongs to a byte-level family (Llama-3, Qwen2.5, SmolLM2), where it cannot.
// Relies on: chat_template.h, jinja_template.h, tokenizer.h, ckpt/gguf.h.
// Tested by: tests/datasets/test_dataset_chat.cpp.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/chat_template.h"
#include "framework/data/jinja_template.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

struct ChatPiece {
  std::string text;
  bool trained = false;
};

// A chat template ready to render: a built-in format, or an interpreted Jinja template with the
// end-of-turn text found for it and the BOS and EOS text of the tokenizer it was resolved for
// (what {{ bos_token }} and {{ eos_token }} print; "" for a token the tokenizer lacks).
class ChatTemplate {
 public:
  explicit ChatTemplate(ChatFormat format) : format_(format) {}
  ChatTemplate(JinjaTemplate jinja, std::string end_of_turn, std::string bos_token, std::string eos_token);

  // The built-in format; nullopt when the template is interpreted.
  std::optional<ChatFormat> format() const { return format_; }
  std::string_view end_of_turn() const;
  // bos_token is used by the built-in Llama-3 formats only.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                     const std::string& bos_token) const;

 private:
  std::optional<ChatFormat> format_;
  std::optional<JinjaTemplate> jinja_;
  std::string end_of_turn_;
  std::string bos_token_;
  std::string eos_token_;
};

// The name data.chat_template gives `format` ("smollm2", "chatml", ...).
std::string_view chat_format_name(ChatFormat format);

// The text that closes a turn in `format`: "<|eot_id|>" (Llama-3) or "<|im_end|>" (ChatML family).
std::string_view chat_end_of_turn(ChatFormat format);

// The whole rendered conversation (add_generation_prompt = false) as consecutive pieces.
// bos_token is the text of the tokenizer's BOS (used by the built-in Llama-3 formats only; an
// interpreted template prints the BOS and EOS of the tokenizer it was resolved for).
std::vector<ChatPiece> chat_training_pieces(const ChatTemplate& chat_template, std::span<const ChatMessage> messages,
                                            const std::string& bos_token);
std::vector<ChatPiece> chat_training_pieces(ChatFormat format, std::span<const ChatMessage> messages,
                                            const std::string& bos_token);

// The chat template DatasetOptions::chat_template (recipe key data.chat_template) names for this
// tokenizer: "auto" (or "") reads chat_template.jinja beside the tokenizer's tokenizer.json
// (where newer transformers save it), else the chat_template of tokenizer_config.json there, or
// that of the GGUF it came from; a format name (llama3,
// llama3_instruct, qwen2_5, smollm2, chatml); a path to a tokenizer_config.json or a Jinja
// template file; or, when it is none of those and holds "{%" or "{{", the template itself.
// A template text that detect_chat_format recognises renders through its built-in format, any
// other through the Jinja interpreter. Throws saying what was looked for, or where a template
// is malformed. Also checks that the end-of-turn marker is a single token of the tokenizer.
ChatTemplate resolve_chat_template(const std::string& setting, const Tokenizer& tokenizer);

// resolve_chat_template for a setting that must come to a built-in format (throws otherwise).
ChatFormat resolve_chat_format(const std::string& setting, const Tokenizer& tokenizer);

}  // namespace farthing::data

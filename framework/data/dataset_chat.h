// dataset_chat.h — a conversation rendered with its chat template for training: the text cut
// into pieces, each marked trained (assistant content and its end-of-turn token) or not.
//
// How the assistant spans are found, without knowing each template's layout:
//   full = render(all messages, add_generation_prompt = false).
//   For assistant message i:
//     start: render messages[0..i] with message i's content replaced by a sentinel string; the
//            span starts where the sentinel is (right after the assistant header).
//     end:   render messages[0..i] with the real content; the span ends after the LAST
//            end-of-turn marker ("<|im_end|>", "<|eot_id|>") in it, i.e. the one that closes
//            message i (a marker typed inside the content cannot be the last one).
//   Both renders must be prefixes of `full` up to those points (every built-in template is
//   prefix-stable); otherwise the conversation is refused rather than masked wrongly. Text after
//   the marker (ChatML's "\n", Llama-3 base's trailing assistant header) stays untrained.
// The pieces are encoded separately (dataset_jsonl.cpp): the cut before the content is exactly
// where generation starts at inference (the prompt ends with the assistant header), and the cut
// after the marker is at a special token, where the tokenizer splits anyway.
// NOTE: a SentencePiece tokenizer with a dummy prefix would put "▁" before each piece; every
// built-in format belongs to a byte-level family (Llama-3, Qwen2.5, SmolLM2), where it cannot.
// Relies on: chat_template.h, tokenizer.h, ckpt/gguf.h. Tested by: tests/datasets/test_dataset_chat.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/chat_template.h"
#include "framework/data/tokenizer.h"

namespace farthing::data {

struct ChatPiece {
  std::string text;
  bool trained = false;
};

// The text that closes a turn in `format`: "<|eot_id|>" (Llama-3) or "<|im_end|>" (ChatML family).
std::string_view chat_end_of_turn(ChatFormat format);

// The whole rendered conversation (add_generation_prompt = false) as consecutive pieces.
// bos_token is the text of the tokenizer's BOS (used by the Llama-3 formats only).
std::vector<ChatPiece> chat_training_pieces(ChatFormat format, std::span<const ChatMessage> messages,
                                            const std::string& bos_token);

// The chat format DatasetOptions::chat_template names for this tokenizer: "auto" (or "") reads
// the chat_template of tokenizer_config.json beside the tokenizer's tokenizer.json, or of the
// GGUF it came from; a format name (llama3, llama3_instruct, qwen2_5, smollm2, chatml); or a path
// to a tokenizer_config.json or a Jinja template file. Throws saying what was looked for.
// Also checks that the format's end-of-turn marker is a single token of the tokenizer.
ChatFormat resolve_chat_format(const std::string& setting, const Tokenizer& tokenizer);

}  // namespace farthing::data

// test_dataset_chat.cpp — "messages" lines: the rendered conversation is cut so that exactly
// each assistant message's content and its end-of-turn token are trained, for every built-in
// chat format (Llama-3's trim, Qwen's default system prompt and tool turns, an end-of-turn
// marker typed inside content), through a byte tokenizer with exact ids and through the real
// Qwen2.5 and Llama-3 tokenizers with their tokenizer_config.json templates (../shared); how the
// template is found (name, Jinja file, tokenizer_config.json, "auto"), and the errors when it
// cannot be; templates no built-in format recognises (inline, a Jinja file, "auto"), rendered by
// the Jinja interpreter, with their end-of-turn token found from the rendering and every way of
// refusing one that cannot be masked. Tests: data/dataset_chat, data/dataset_jsonl.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/data/dataset.h"
#include "framework/data/dataset_chat.h"
#include "framework/data/tokenizer_loaders.h"
#include "tests/datasets/dataset_test_support.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing::data;
using namespace farthing::test;
using Ids = std::vector<int32_t>;

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "hi"}, {"assistant", " yo "}, {"user", "ok?"}, {"assistant", "no<|im_end|>x"}};

std::string jsonl_line(const std::vector<ChatMessage>& messages) {
  nlohmann::json row;
  row["messages"] = nlohmann::json::array();
  for (const ChatMessage& m : messages) row["messages"].push_back({{"role", m.role}, {"content", m.content}});
  return row.dump() + "\n";
}

// Runs of consecutive trained tokens.
std::vector<Ids> trained_runs(const TokenStream& s) {
  std::vector<Ids> runs;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (!s.loss_mask[i]) continue;
    if (i == 0 || !s.loss_mask[i - 1]) runs.emplace_back();
    runs.back().push_back(s.tokens[i]);
  }
  return runs;
}

std::string text_of(const std::vector<ChatPiece>& pieces, bool trained) {
  std::string out;
  for (const ChatPiece& p : pieces) {
    if (p.trained == trained) out += p.text + "|";
  }
  return out;
}

TEST(DatasetChat, AssistantSpansInEveryFormat) {
  struct Case {
    ChatFormat format;
    std::string trained;
  };
  const std::vector<Case> cases = {
      {ChatFormat::kChatML, " yo <|im_end|>|no<|im_end|>x<|im_end|>|"},
      {ChatFormat::kQwen2_5, " yo <|im_end|>|no<|im_end|>x<|im_end|>|"},
      {ChatFormat::kSmolLM2, " yo <|im_end|>|no<|im_end|>x<|im_end|>|"},
      {ChatFormat::kLlama3, "yo<|eot_id|>|no<|im_end|>x<|eot_id|>|"},  // Llama-3 trims content
      {ChatFormat::kLlama3Instruct, "yo<|eot_id|>|no<|im_end|>x<|eot_id|>|"},
  };
  for (const Case& c : cases) {
    const std::vector<ChatPiece> pieces = chat_training_pieces(c.format, kConversation, "<|begin_of_text|>");
    std::string all;
    for (const ChatPiece& p : pieces) all += p.text;
    EXPECT_EQ(all, render_chat(c.format, kConversation, false)) << int(c.format);
    EXPECT_EQ(text_of(pieces, true), c.trained) << int(c.format);
  }
  // The untrained rest, for ChatML: headers, the other turns, and the "\n" after each marker.
  EXPECT_EQ(text_of(chat_training_pieces(ChatFormat::kChatML, kConversation, ""), false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n|"
            "\n<|im_start|>user\nok?<|im_end|>\n<|im_start|>assistant\n|\n|");
  // Llama-3 base always ends with an assistant header: untrained.
  const auto llama = chat_training_pieces(ChatFormat::kLlama3, kConversation, "<|begin_of_text|>");
  EXPECT_FALSE(llama.back().trained);
  EXPECT_EQ(llama.back().text, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(DatasetChat, AssistantFirstAndToolTurns) {
  const std::vector<ChatMessage> opening = {{"assistant", "Hello!"}, {"user", "hi"}};
  for (ChatFormat f : {ChatFormat::kChatML, ChatFormat::kQwen2_5, ChatFormat::kSmolLM2, ChatFormat::kLlama3}) {
    const std::string eot(chat_end_of_turn(f));
    EXPECT_EQ(text_of(chat_training_pieces(f, opening, "<|begin_of_text|>"), true), "Hello!" + eot + "|") << int(f);
  }
  const std::vector<ChatMessage> tools = {
      {"user", "weather?"}, {"assistant", "call"}, {"tool", "sunny"}, {"tool", "warm"}, {"assistant", "Sunny."}};
  const auto pieces = chat_training_pieces(ChatFormat::kQwen2_5, tools, "");
  EXPECT_EQ(text_of(pieces, true), "call<|im_end|>|Sunny.<|im_end|>|");
  EXPECT_NE(text_of(pieces, false).find("<tool_response>\nwarm\n</tool_response>"), std::string::npos);
}

TEST(DatasetChat, ByteTokenizerMasksExactly) {
  const TempDir dir("farthing-chat");
  const Tokenizer tok(byte_tokenizer_spec());
  // "messages" wins over "prompt"/"response" on the same row (UltraChat rows carry both).
  nlohmann::json row = nlohmann::json::parse(jsonl_line({{"user", "hi"}, {"assistant", "yo"}}));
  row["prompt"] = "hi";
  row["response"] = "ignored";
  const auto path = write_file(dir / "chat.jsonl", row.dump() + "\n" + jsonl_line(kConversation));
  DatasetOptions o;
  o.chat_template = "chatml";
  const TokenStream s = load_token_stream(path, o, &tok, 260);
  const std::vector<Ids> expected_runs = {
      {'y', 'o', kByteImEnd}, {' ', 'y', 'o', ' ', kByteImEnd}, {'n', 'o', kByteImEnd, 'x', kByteImEnd}};
  EXPECT_EQ(trained_runs(s), expected_runs);
  // BOS + the rendered text (its markers as special tokens) + EOS, per line; neither end trained.
  Ids first = {kByteBos};
  for (int32_t id : tok.encode(render_chat(ChatFormat::kChatML, std::vector<ChatMessage>{{"user", "hi"}, {"assistant", "yo"}}, false)))
    first.push_back(id);
  first.push_back(kByteEos);
  ASSERT_GT(s.tokens.size(), first.size());
  EXPECT_EQ(Ids(s.tokens.begin(), s.tokens.begin() + first.size()), first);
  EXPECT_EQ(s.loss_mask.front(), 0);
  EXPECT_EQ(s.loss_mask.back(), 0);
  EXPECT_EQ(s.tokens.back(), kByteEos);
}

TEST(DatasetChat, TemplateFromNameJinjaFileConfigAndAuto) {
  const TempDir dir("farthing-chat");
  const Tokenizer tok(byte_tokenizer_spec());
  const std::string chatml_jinja =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}";
  EXPECT_EQ(resolve_chat_format("chatml", tok), ChatFormat::kChatML);
  EXPECT_EQ(resolve_chat_format(write_file(dir / "t.jinja", chatml_jinja).string(), tok), ChatFormat::kChatML);
  nlohmann::json config;
  config["chat_template"] = nlohmann::json::array(
      {{{"name", "tool_use"}, {"template", "{{ tools }}"}}, {{"name", "default"}, {"template", chatml_jinja}}});
  write_file(dir / "tokenizer_config.json", config.dump());
  EXPECT_EQ(resolve_chat_format((dir / "tokenizer_config.json").string(), tok), ChatFormat::kChatML);
  // "auto": tokenizer_config.json beside the tokenizer.json the tokenizer came from.
  write_file(dir / "tokenizer.json", "{}");
  const Tokenizer beside(byte_tokenizer_spec((dir / "tokenizer.json").string()));
  EXPECT_EQ(resolve_chat_format("auto", beside), ChatFormat::kChatML);
  // chat_template.jinja beside tokenizer.json (newer transformers' layout) comes first.
  write_file(dir / "chat_template.jinja",
             "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
             "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
             "<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
             "'<|im_end|>' + '\\n'}}{% endfor %}");
  EXPECT_EQ(resolve_chat_format("auto", beside), ChatFormat::kSmolLM2);
  std::filesystem::remove(dir / "chat_template.jinja");
  EXPECT_EQ(resolve_chat_format("auto", beside), ChatFormat::kChatML);
  // chat_format_name gives the name each format is set by (farthing init writes it into recipes);
  // the Llama-3 formats need <|eot_id|>, which this tokenizer lacks.
  for (ChatFormat f : {ChatFormat::kChatML, ChatFormat::kSmolLM2, ChatFormat::kQwen2_5}) {
    EXPECT_EQ(resolve_chat_format(std::string(chat_format_name(f)), tok), f) << chat_format_name(f);
  }
  EXPECT_EQ(chat_format_name(ChatFormat::kLlama3), "llama3");
  EXPECT_EQ(chat_format_name(ChatFormat::kLlama3Instruct), "llama3_instruct");
}

TEST(DatasetChat, Errors) {
  const TempDir dir("farthing-chat");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "chat.jsonl", "{\"text\": \"a\"}\n" + jsonl_line({{"user", "hi"}, {"assistant", "yo"}}));
  DatasetOptions o;  // chat_template "auto", but the byte tokenizer has no files
  expect_error([&] { load_token_stream(path, o, &tok, 260); },
               {"chat.jsonl:2:", "chat template", "tokenizer_config.json", "chatml"});
  o.chat_template = "vicuna";
  expect_error([&] { load_token_stream(path, o, &tok, 260); }, {"chat.jsonl:2:", "'vicuna'", "llama3, llama3_instruct"});
  o.chat_template = "llama3";  // the byte tokenizer has no <|eot_id|>
  expect_error([&] { load_token_stream(path, o, &tok, 260); }, {"chat.jsonl:2:", "<|eot_id|>", "no such token"});
  o.chat_template = "chatml";
  const auto bad_role = write_file(dir / "role.jsonl", jsonl_line({{"user", "hi"}, {"bot", "yo"}}));
  expect_error([&] { load_token_stream(bad_role, o, &tok, 260); }, {"role.jsonl:1:", "role 'bot'", "assistant"});
  const auto empty = write_file(dir / "empty.jsonl", "{\"messages\": []}\n");
  expect_error([&] { load_token_stream(empty, o, &tok, 260); }, {"empty.jsonl:1:", "\"messages\" is empty"});
  expect_error([] { detect_chat_format("{{ messages }}"); }, {"unknown chat template"});
  // A chat set without one assistant message has nothing to train on.
  const auto user_only = write_file(dir / "users.jsonl", jsonl_line({{"user", "a long question to fill a sequence"}}));
  o.seq_len = 8;
  expect_error([&] { load_split_data(user_only, "", o, &tok, 260); }, {"users.jsonl", "no target carries loss"});
}

// The real thing: Qwen2.5's and Llama-3's tokenizer.json with the chat_template of their
// tokenizer_config.json, found by "auto".
void check_real_tokenizer(const std::filesystem::path& tokenizer_dir, const std::string& eot, bool template_has_bos) {
  const Tokenizer tok = load_tokenizer(tokenizer_dir / "tokenizer.json");
  const TempDir dir("farthing-chat");
  const auto path = write_file(dir / "chat.jsonl", jsonl_line(kConversation));
  const TokenStream s = load_token_stream(path, DatasetOptions{}, &tok, tok.vocab_size());
  const std::vector<Ids> runs = trained_runs(s);
  ASSERT_EQ(runs.size(), 2u);
  const bool trims = eot == "<|eot_id|>";
  EXPECT_EQ(tok.decode(runs[0]), (trims ? "yo" : " yo ") + eot);
  EXPECT_EQ(tok.decode(runs[1]), "no<|im_end|>x" + eot);
  EXPECT_EQ(runs[1].back(), tok.encode(eot).front());
  if (template_has_bos) {  // the template's own BOS, not a second one
    ASSERT_GE(tok.bos_id(), 0);
    EXPECT_EQ(s.tokens[0], tok.bos_id());
    EXPECT_NE(s.tokens[1], tok.bos_id());
  }
  if (tok.eos_id() >= 0) {
    EXPECT_EQ(s.tokens.back(), tok.eos_id());
  }
}

TEST(DatasetChat, Qwen2_5TokenizerWithItsTemplate) {
  FARTHING_REQUIRE_SHARED(shared);
  check_real_tokenizer(shared / "tokenizers/qwen2_5", "<|im_end|>", false);
}

TEST(DatasetChat, Llama3TokenizerWithItsTemplate) {
  FARTHING_REQUIRE_SHARED(shared);
  check_real_tokenizer(shared / "tokenizers/llama3", "<|eot_id|>", true);
}

// A template none of the built-in formats recognises (no <|im_start|>): interpreted, its
// end-of-turn the special token right after the assistant content.
const std::string kTrimmingTemplate =
    "{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}";
const std::string kEosTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<|' + m.role + '|>\\n' + m.content + eos_token + '\\n' }}{% endfor %}";

TEST(DatasetChat, InlineTemplateIsInterpreted) {
  const Tokenizer tok(byte_tokenizer_spec());
  const ChatTemplate trimming = resolve_chat_template(kTrimmingTemplate, tok);
  EXPECT_FALSE(trimming.format().has_value());
  EXPECT_EQ(trimming.end_of_turn(), "<|im_end|>");
  const std::vector<ChatPiece> pieces = chat_training_pieces(trimming, kConversation, "<s>");
  std::string all;
  for (const ChatPiece& p : pieces) all += p.text;
  EXPECT_EQ(all, trimming.render(kConversation, false, "<s>"));
  // Trimmed content; a marker typed inside the content stays inside the span.
  EXPECT_EQ(text_of(pieces, true), "yo<|im_end|>|no<|im_end|>x<|im_end|>|");
  EXPECT_EQ(text_of(pieces, false), "[system] Be brief.<|im_end|>\n[user] hi<|im_end|>\n[assistant] |\n[user] ok?<|im_end|>\n"
                                    "[assistant] |\n|");
  EXPECT_EQ(trimming.render(std::vector<ChatMessage>{{"user", "q"}}, true, ""), "[user] q<|im_end|>\n[assistant] ");
  // {{ eos_token }} prints the tokenizer's EOS, and that is the end-of-turn here.
  const ChatTemplate eos = resolve_chat_template(kEosTemplate, tok);
  EXPECT_EQ(eos.end_of_turn(), "</s>");
  EXPECT_EQ(text_of(chat_training_pieces(eos, kConversation, "<s>"), true), " yo </s>|no<|im_end|>x</s>|");
  // An interpreted template prints the BOS of the tokenizer it was resolved for, and nothing
  // for a tokenizer without one (the argument is for the built-in Llama-3 formats).
  EXPECT_EQ(eos.render(std::vector<ChatMessage>{{"user", "q"}}, false, "<|begin_of_text|>"), "<s><|user|>\nq</s>\n");
  TokenizerSpec no_bos_spec = byte_tokenizer_spec();
  no_bos_spec.bos_id = -1;
  const Tokenizer no_bos(std::move(no_bos_spec));
  EXPECT_EQ(resolve_chat_template(kEosTemplate, no_bos).render(std::vector<ChatMessage>{{"user", "q"}}, false, "<s>"),
            "<|user|>\nq</s>\n");
  // Longer than a file name may be: looking for such a file must not throw (the fuzz seed corpus
  // found std::filesystem's "File name too long" escaping).
  const ChatTemplate long_inline = resolve_chat_template("{# " + std::string(5000, 'x') + " #}" + kTrimmingTemplate, tok);
  EXPECT_EQ(long_inline.end_of_turn(), "<|im_end|>");
}

// Qwen3's ChatML with thinking blocks (farthing's own template in its style, checked against
// jinja2 by test_jinja_goldens): the assistant turns after the last user message open with a
// think block, which is not trained; each content and its <|im_end|> are, nothing else.
TEST(DatasetChat, ThinkingTemplateTrainsTheAssistantTurnsOnly) {
  std::ifstream in(test_data_dir() / "tokenizers" / "jinja_goldens.json");
  const nlohmann::json goldens = nlohmann::json::parse(in);
  std::string text;
  for (const auto& t : goldens["templates"]) {
    if (t["name"] == "qwen3_thinking_style") text = t["text"].get<std::string>();
  }
  ASSERT_FALSE(text.empty()) << "jinja_goldens.json has no qwen3_thinking_style";
  const Tokenizer tok(byte_tokenizer_spec());
  const ChatTemplate qwen3 = resolve_chat_template(text, tok);
  EXPECT_EQ(qwen3.end_of_turn(), "<|im_end|>");
  const std::vector<ChatMessage> conversation = {
      {"system", "Be brief."}, {"user", "hi"}, {"assistant", " yo "}, {"user", "ok?"}, {"assistant", "no"}};
  const std::vector<ChatPiece> pieces = chat_training_pieces(qwen3, conversation, "<s>");
  EXPECT_EQ(text_of(pieces, true), " yo <|im_end|>|no<|im_end|>|");
  EXPECT_EQ(text_of(pieces, false), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                                    "<|im_start|>assistant\n|\n<|im_start|>user\nok?<|im_end|>\n<|im_start|>assistant\n"
                                    "<think>\n\n</think>\n\n|\n|");
  // A reasoning trace at the start of an assistant turn's content: the template moves it into the
  // think block of the turns after the last user message, and drops it from the earlier ones. The
  // trained span is what the model generates after the generation prompt: the think block with the
  // trace, the answer and <|im_end|> in the last turn; the answer alone in the earlier one.
  const std::vector<ChatMessage> thinking = {{"user", "2+2?"},
                                             {"assistant", "<think>add</think>4"},
                                             {"user", "3+3?"},
                                             {"assistant", "<think>\nadd again\n</think>\n6"}};
  const std::vector<ChatPiece> reasoned = chat_training_pieces(qwen3, thinking, "<s>");
  EXPECT_EQ(text_of(reasoned, true), "4<|im_end|>|<think>\nadd again\n</think>\n\n6<|im_end|>|");
  EXPECT_EQ(text_of(reasoned, false), "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n|\n"
                                      "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n|\n|");
  std::string whole;
  for (const ChatPiece& p : reasoned) whole += p.text;
  EXPECT_EQ(whole, qwen3.render(thinking, false, "<s>"));
}

// Gemma 3's template (as google/gemma-3-*-it ship it, checked against jinja2 by
// test_jinja_goldens): the system message is folded into the first user turn, the assistant is
// "model", contents are trimmed. Each model turn's content and its <end_of_turn> are trained,
// nothing else: not the folded system text, the user turns or the turn headers.
TEST(DatasetChat, Gemma3TemplateTrainsTheModelTurnsOnly) {
  std::ifstream in(test_data_dir() / "tokenizers" / "jinja_goldens.json");
  const nlohmann::json goldens = nlohmann::json::parse(in);
  std::string text;
  for (const auto& t : goldens["templates"]) {
    if (t["name"] == "gemma3") text = t["text"].get<std::string>();
  }
  ASSERT_FALSE(text.empty()) << "jinja_goldens.json has no gemma3";
  TokenizerSpec spec = byte_tokenizer_spec();  // with Gemma's turn tokens as special tokens
  for (const char* special : {"<start_of_turn>", "<end_of_turn>"}) {
    spec.added_tokens.push_back({special, int32_t(spec.pieces.size())});
    spec.pieces.push_back(special);
    spec.scores.push_back(0.0f);
  }
  const Tokenizer tok(std::move(spec));
  const ChatTemplate gemma3 = resolve_chat_template(text, tok);
  EXPECT_EQ(gemma3.end_of_turn(), "<end_of_turn>");
  const std::vector<ChatMessage> conversation = {
      {"system", "Be brief."}, {"user", "hi"}, {"assistant", "yo"}, {"user", "ok?"}, {"assistant", "no"}};
  const std::vector<ChatPiece> pieces = chat_training_pieces(gemma3, conversation, "<s>");
  EXPECT_EQ(text_of(pieces, true), "yo<end_of_turn>|no<end_of_turn>|");
  EXPECT_EQ(text_of(pieces, false), "<s><start_of_turn>user\nBe brief.\n\nhi<end_of_turn>\n<start_of_turn>model\n|\n"
                                    "<start_of_turn>user\nok?<end_of_turn>\n<start_of_turn>model\n|\n|");
}

TEST(DatasetChat, InterpretedTemplateThroughTheDataset) {
  const TempDir dir("farthing-chat");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "chat.jsonl", jsonl_line(kConversation));
  DatasetOptions o;
  o.chat_template = kTrimmingTemplate;
  const TokenStream s = load_token_stream(path, o, &tok, 260);
  const std::vector<Ids> expected_runs = {{'y', 'o', kByteImEnd}, {'n', 'o', kByteImEnd, 'x', kByteImEnd}};
  EXPECT_EQ(trained_runs(s), expected_runs);
  EXPECT_EQ(s.tokens.front(), kByteBos);  // the template has no BOS: the dataset adds one
  // The same template from a Jinja file, and through "auto" from tokenizer_config.json.
  o.chat_template = write_file(dir / "t.jinja", kTrimmingTemplate).string();
  EXPECT_EQ(trained_runs(load_token_stream(path, o, &tok, 260)), expected_runs);
  write_file(dir / "tokenizer_config.json", nlohmann::json({{"chat_template", kTrimmingTemplate}}).dump());
  write_file(dir / "tokenizer.json", "{}");
  const Tokenizer beside(byte_tokenizer_spec((dir / "tokenizer.json").string()));
  o.chat_template = "auto";
  EXPECT_EQ(trained_runs(load_token_stream(path, o, &beside, 260)), expected_runs);
  // An eos_token template starts with {{ bos_token }}: no second BOS.
  o.chat_template = kEosTemplate;
  const TokenStream e = load_token_stream(path, o, &tok, 260);
  EXPECT_EQ(e.tokens[0], kByteBos);
  EXPECT_NE(e.tokens[1], kByteBos);
}

TEST(DatasetChat, InterpretedTemplateErrors) {
  const TempDir dir("farthing-chat");
  const Tokenizer tok(byte_tokenizer_spec());
  const auto path = write_file(dir / "chat.jsonl", "{\"text\": \"a\"}\n" + jsonl_line(kConversation));
  DatasetOptions o;
  const auto load = [&] { load_token_stream(path, o, &tok, 260); };
  // Malformed or outside the subset: the JSONL line, the key, line and column, what was expected.
  o.chat_template = "{% for m in messages %}\n{{ m.content }<|im_end|>{% endfor %}";
  expect_error(load, {"chat.jsonl:2:", "chat template data.chat_template, line 2 column 14", "unexpected '}'"});
  o.chat_template = "{% for m in messages %}{{ m.content | upper }}<|im_end|>{% endfor %}";
  expect_error(load, {"chat.jsonl:2:", "data.chat_template, line 1 column 39", "the filter 'upper'", "not supported"});
  o.chat_template = write_file(dir / "bad.jinja", "{% if true %}").string();
  expect_error(load, {"chat template " + o.chat_template + ", line 1 column 4", "expected {% endif %}"});
  // No special token right after the assistant content: what it emits there is named.
  o.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";
  expect_error(load, {"chat.jsonl:2:", "data.chat_template", "it emits \"\\n", "does not start with a special token",
                      "byte-tokenizer"});
  // The content is not rendered as it is.
  o.chat_template = "{% for m in messages %}{{ m.content | length }}<|im_end|>{% endfor %}";
  expect_error(load, {"does not render an assistant message's content as it is"});
  // raise_exception in both probe conversations: its message.
  o.chat_template = "{{ raise_exception('Only user messages here') }}";
  expect_error(load, {"to find the end-of-turn token", "raised an error at line 1 column 4", "Only user messages here"});
  // The end-of-turn follows the first assistant message only.
  o.chat_template = "{% for m in messages %}{{ m.content }}{% if loop.index0 == 1 %}<|im_end|>{% endif %}{% endfor %}";
  expect_error(load, {"assistant message 2", "not with its end-of-turn token <|im_end|>"});
  // Messages rendered last to first: not prefix-stable.
  o.chat_template = "{% for m in messages[::-1] %}{{ m.content }}<|im_end|>{% endfor %}";
  expect_error(load, {"prefix-stable"});
  // Text that is no format name, no file and no template.
  o.chat_template = "chat-ml";
  expect_error(load, {"'chat-ml'", "nor an inline Jinja template"});
  // resolve_chat_format is for built-in formats only.
  expect_error([&] { resolve_chat_format(kTrimmingTemplate, tok); }, {"not one of the built-in formats"});
}

}  // namespace

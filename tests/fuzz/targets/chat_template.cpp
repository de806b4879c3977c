// Fuzz target: chat templates as users point data.chat_template at them. Byte 0 picks how the
// rest arrives: 0 a tokenizer_config.json whose "chat_template" is read, 1 a Jinja file, 2 the
// setting itself (an inline template). The template it resolves to (a built-in format or the
// Jinja interpreter) renders a fixed conversation into training pieces and, with and without the
// generation prompt, into a prompt; the pieces must spell the rendering. Then the text is also
// parsed directly as a Jinja template and rendered for an empty, a short and the fixed
// conversation, so the interpreter sees templates that resolve would refuse before rendering.
#include <string>
#include <vector>

#include "framework/data/chat_template.h"
#include "framework/data/dataset_chat.h"
#include "framework/data/jinja_template.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/byte_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  if (size < 1) return 0;
  const int kind = data[0] % 3;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<data::ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "  Hi there \n"}, {"assistant", "Hello!"}, {"tool", "{\"x\": 1}"},
      {"tool", "2"}, {"user", "Bye"}, {"assistant", " Bye. "}};
  // An inline setting is tried only as a template: other text could name a file on this machine.
  const bool resolvable = kind != 2 || ((text.find("{%") != std::string::npos || text.find("{{") != std::string::npos) &&
                                        text.find('\0') == std::string::npos);
  if (resolvable) fuzz::guarded([&] {
    const std::string setting =
        kind == 2 ? text
                  : fuzz::input_file(data + 1, size - 1, kind == 0 ? "tokenizer_config.json" : "template.jinja").string();
    const data::ChatTemplate chat_template = data::resolve_chat_template(setting, fuzz::byte_tokenizer());
    std::string joined;
    for (const data::ChatPiece& piece : data::chat_training_pieces(chat_template, messages, "<|begin_of_text|>")) {
      joined += piece.text;
    }
    if (joined != chat_template.render(messages, false, "<|begin_of_text|>")) {
      std::fprintf(stderr, "fuzz: the chat training pieces do not spell the rendered conversation\n");
      std::abort();
    }
    (void)chat_template.render(messages, true, "<|begin_of_text|>");
  });
  if (kind == 0) return 0;
  fuzz::guarded([&] {
    const data::JinjaTemplate jinja(text, "fuzz-input");
    const std::vector<data::ChatMessage> short_chat = {{"user", "caf\xC3\xA9 \xE2\x80\x94 ok"}};
    for (const auto& conversation : {std::vector<data::ChatMessage>{}, short_chat, messages}) {
      for (bool add_generation_prompt : {false, true}) {
        fuzz::guarded([&] { (void)jinja.render(conversation, add_generation_prompt, "<s>", "</s>"); });
      }
    }
  });
  return 0;
}

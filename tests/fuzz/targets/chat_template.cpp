// Fuzz target: chat templates as users point data.chat_template at them. Byte 0 picks the file
// kind (even: a tokenizer_config.json whose "chat_template" is read; odd: a Jinja file); the rest
// is the file. The format it resolves to renders a fixed conversation into training pieces and,
// with and without the generation prompt, into a prompt; the pieces must spell the rendering.
#include <string>
#include <vector>

#include "framework/data/chat_template.h"
#include "framework/data/dataset_chat.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/targets/byte_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  if (size < 1) return 0;
  const bool json = data[0] % 2 == 0;
  const auto path = fuzz::input_file(data + 1, size - 1, json ? "tokenizer_config.json" : "template.jinja");
  fuzz::guarded([&] {
    const data::ChatFormat format = data::resolve_chat_format(path.string(), fuzz::byte_tokenizer());
    const std::vector<data::ChatMessage> messages = {
        {"system", "Be brief."}, {"user", "  Hi there \n"}, {"assistant", "Hello!"}, {"tool", "{\"x\": 1}"},
        {"tool", "2"}, {"user", "Bye"}, {"assistant", " Bye. "}};
    std::string joined;
    for (const data::ChatPiece& piece : data::chat_training_pieces(format, messages, "<|begin_of_text|>")) {
      joined += piece.text;
    }
    if (joined != data::render_chat(format, messages, false, "<|begin_of_text|>")) {
      std::fprintf(stderr, "fuzz: the chat training pieces do not spell the rendered conversation\n");
      std::abort();
    }
    (void)data::render_chat(format, messages, true, "<|begin_of_text|>");
  });
  return 0;
}

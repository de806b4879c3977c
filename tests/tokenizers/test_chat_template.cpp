// test_chat_template.cpp — the built-in chat renderers give exactly what jinja2 renders from
// the templates themselves (Llama-3 base and Instruct, Qwen2.5, SmolLM2's from its GGUF, plain
// ChatML; with and without a generation prompt; system, multi-turn and tool messages), and
// detect_chat_format recognises each template. Golden: tests/data/tokenizers/chat_goldens.json
// from tools/goldens/gen_chat_goldens.py. Tests: data/chat_template.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/chat_template.h"
#include "tests/support/test_support.h"

namespace {

using namespace farthing::data;

TEST(ChatTemplate, RenderersEqualJinja) {
  std::ifstream in(farthing::test::test_data_dir() / "tokenizers/chat_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json g = nlohmann::json::parse(in);
  const std::vector<std::pair<std::string, ChatFormat>> formats = {
      {"llama3", ChatFormat::kLlama3}, {"llama3_instruct", ChatFormat::kLlama3Instruct},
      {"qwen2_5", ChatFormat::kQwen2_5}, {"smollm2", ChatFormat::kSmolLM2}, {"chatml", ChatFormat::kChatML}};
  for (const auto& [name, format] : formats) {
    EXPECT_EQ(detect_chat_format(g["templates"][name].get<std::string>()), format) << name;
    size_t k = 0;
    for (const auto& conv : g["conversations"]) {
      std::vector<ChatMessage> messages;
      for (const auto& m : conv) messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      for (bool agp : {false, true}) {
        const nlohmann::json& want = g["results"][name][k++];
        ASSERT_EQ(want["add_generation_prompt"].get<bool>(), agp);
        EXPECT_EQ(render_chat(format, messages, agp), want["text"].get<std::string>()) << name << " #" << k;
      }
    }
  }
}

TEST(ChatTemplate, UnknownTemplateIsAnError) {
  EXPECT_THROW(detect_chat_format("{{ messages[0].content }}"), farthing::Error);
}

}  // namespace

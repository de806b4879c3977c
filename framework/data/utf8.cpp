// utf8.cpp — see utf8.h.
#include "framework/data/utf8.h"

#include <unordered_map>
#include <vector>

namespace farthing::data {

size_t utf8_char_len(std::string_view text, size_t pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  const size_t left = text.size() - pos;
  const uint8_t c = p[0];
  if (c < 0x80) return 1;
  auto cont = [&](size_t i) { return i < left && (p[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 1;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 1;
    if (c == 0xE0 && p[1] < 0xA0) return 1;  // overlong
    if (c == 0xED && p[1] >= 0xA0) return 1;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 1;
    if (c == 0xF0 && p[1] < 0x90) return 1;  // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 1;  // > U+10FFFF
    return 4;
  }
  return 1;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

namespace {
struct ByteLevelTables {
  std::array<uint32_t, 256> code_point{};
  std::array<std::string, 256> text{};
  std::unordered_map<uint32_t, uint8_t> to_byte;
  ByteLevelTables() {
    // Printable bytes map to themselves; the other 68 take code points 256, 257, ... in order.
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      code_point[size_t(b)] = printable ? uint32_t(b) : next++;
      utf8_append(text[size_t(b)], code_point[size_t(b)]);
      to_byte[code_point[size_t(b)]] = uint8_t(b);
    }
  }
};
const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}
}  // namespace

uint32_t byte_level_code_point(uint8_t b) { return tables().code_point[b]; }
const std::string& byte_level_char(uint8_t b) { return tables().text[b]; }

bool byte_level_decode(std::string_view text, std::string& out) {
  const auto& t = tables();
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = utf8_char_len(text, pos);
    const auto* p = reinterpret_cast<const uint8_t*>(text.data()) + pos;
    uint32_t cp = 0;
    if (n == 1) cp = p[0];
    else if (n == 2) cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    else if (n == 3) cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    else cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    if (n == 1 && p[0] >= 0x80) return false;
    auto it = t.to_byte.find(cp);
    if (it == t.to_byte.end()) return false;
    out += char(it->second);
    pos += n;
  }
  return true;
}

}  // namespace farthing::data

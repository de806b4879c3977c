// utf8.h — the little UTF-8 and byte-level helpers the tokenizers share.
//
// utf8_char_len accepts only well-formed sequences (no overlongs, no surrogates, <= U+10FFFF),
// so invalid bytes become 1-byte "characters" that tokenizers route to byte tokens.
// byte_level_* is GPT-2's reversible byte <-> printable-code-point alphabet.
// Relies on: nothing. Tested by: tests/tokenizers/test_tokenizer_unit.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace farthing::data {

// Length (1..4) of the well-formed UTF-8 character at text[pos]; 1 for an invalid byte.
size_t utf8_char_len(std::string_view text, size_t pos);

// Appends the UTF-8 encoding of code point cp.
void utf8_append(std::string& out, uint32_t cp);

// GPT-2 bytes_to_unicode: byte b is written as the code point byte_level_code_point(b).
uint32_t byte_level_code_point(uint8_t b);
// The UTF-8 text of byte b in the byte-level alphabet ("Ġ" for ' ').
const std::string& byte_level_char(uint8_t b);
// Decodes a byte-level string back to raw bytes; false when a character is outside the alphabet.
bool byte_level_decode(std::string_view text, std::string& out);

}  // namespace farthing::data

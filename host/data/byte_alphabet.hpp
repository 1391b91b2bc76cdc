// GPT-2's byte-level alphabet (bytes_to_unicode in OpenAI's encoder.py, ByteLevel in Hugging Face tokenizers):
// every byte value is spelled as one printable character, so that a vocabulary of byte strings can be stored
// as JSON text. Printable Latin-1 bytes stand for themselves; the other 68 (controls, the space, 0x7F-0xA0,
// 0xAD) map to U+0100.. in byte order, e.g. the space byte is "Ġ" (U+0120) and the newline "Ċ" (U+010A).
// Shared by the GPT-2 files' tokenizer (tokenizer_bpe.cpp) and the Hugging Face one (tokenizer_hf.cpp).
#pragma once

#include <string>
#include <string_view>

namespace gradsweep::data {

// Raw bytes -> their spelling (UTF-8, one character per byte).
std::string to_byte_level(std::string_view bytes);

// A spelling -> the raw bytes. Throws std::invalid_argument on bad UTF-8 or a character outside the
// 256-character alphabet (the caller adds where the text came from).
std::string from_byte_level(std::string_view spelled);

// The same without throwing: false (and `bytes` unspecified) where from_byte_level() would throw. A Hugging
// Face vocabulary may hold tokens outside the alphabet (an added "<mask> "), which its decoder passes through.
bool try_from_byte_level(std::string_view spelled, std::string& bytes);

}  // namespace gradsweep::data

#include "data/byte_alphabet.hpp"

#include <cstdint>
#include <stdexcept>
#include <unordered_map>

namespace gradsweep::data {
namespace {

struct ByteAlphabet {
  int32_t codepoint[256];
  std::unordered_map<int32_t, unsigned char> byte_of;  // codepoint -> byte

  ByteAlphabet() {
    int32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      codepoint[b] = printable ? b : next++;
      byte_of.emplace(codepoint[b], static_cast<unsigned char>(b));
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet table;
  return table;
}

// The alphabet's code points are below U+0800, so two UTF-8 bytes at most.
void append_utf8(std::string& out, int32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes `spelled` into `bytes`; on failure returns the reason (empty on success). One loop for the throwing
// and the non-throwing entry points, so that both accept exactly the same spellings.
std::string decode(std::string_view spelled, std::string& bytes) {
  bytes.clear();
  size_t i = 0;
  while (i < spelled.size()) {
    const auto c = static_cast<unsigned char>(spelled[i]);
    int32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F, len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F, len = 3;
    } else {
      return "\"" + std::string(spelled) + "\" is not in GPT-2's byte alphabet";
    }
    if (i + len > spelled.size()) return "truncated UTF-8 in \"" + std::string(spelled) + "\"";
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(spelled[i + k]) & 0x3F);
    const auto it = alphabet().byte_of.find(cp);
    if (it == alphabet().byte_of.end()) {
      return "\"" + std::string(spelled) + "\" has a character (U+" + std::to_string(cp) +
             ") outside GPT-2's byte alphabet";
    }
    bytes.push_back(static_cast<char>(it->second));
    i += len;
  }
  return {};
}

}  // namespace

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) append_utf8(out, alphabet().codepoint[static_cast<unsigned char>(c)]);
  return out;
}

std::string from_byte_level(std::string_view spelled) {
  std::string bytes;
  const std::string error = decode(spelled, bytes);
  if (!error.empty()) throw std::invalid_argument(error);
  return bytes;
}

bool try_from_byte_level(std::string_view spelled, std::string& bytes) { return decode(spelled, bytes).empty(); }

}  // namespace gradsweep::data

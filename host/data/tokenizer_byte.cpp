// Byte tokenizer: id = byte value (0..255), plus id 256 = end of text between documents.
//
// The extra id rather than a textual separator such as "\n\n": fortunes and paragraphs contain blank lines
// themselves, so only an id that no text can produce marks document boundaries unambiguously.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "data/tokenizer.hpp"

namespace gradsweep::data {
namespace {

constexpr int32_t kEndOfTextId = 256;
// How the end-of-text id reads when decoded (GPT-2's spelling, so samples look alike across tokenizers).
constexpr std::string_view kEndOfTextSpelling = "<|endoftext|>";

class ByteTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "byte"; }
  int64_t vocab_size() const override { return 257; }
  int32_t end_of_text() const override { return kEndOfTextId; }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids(text.size());
    for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    text.reserve(ids.size());
    for (const int32_t id : ids) {
      if (id >= 0 && id < 256) {
        text.push_back(static_cast<char>(id));
      } else if (id == kEndOfTextId) {
        text.append(kEndOfTextSpelling);
      } else {
        throw std::out_of_range("byte tokenizer: id " + std::to_string(id) + " is outside [0, 257)");
      }
    }
    return text;
  }

  nlohmann::json to_json() const override { return {{"name", "byte"}, {"vocab_size", 257}}; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

std::unique_ptr<Tokenizer> byte_tokenizer_from_json(const nlohmann::json& /*description*/) {
  return make_byte_tokenizer();
}

}  // namespace gradsweep::data

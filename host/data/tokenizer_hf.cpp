// A Hugging Face tokenizer.json of the byte-level BPE kind (GPT-2's, Llama-3's, and what `tokenizers` trains
// with a ByteLevel pre-tokenizer), giving the ids of tokenizers' encode(text, add_special_tokens=False).
//
// encode: added tokens are cut out of the text first (hf_added_tokens.hpp); the rest is cut into pieces by
// the pre-tokenizer (hf_pretokenizer.hpp) and each piece is merged by the BPE model (hf_bpe_model.hpp).
// Parts of a tokenizer.json that would change ids and that gradsweep does not reproduce are refused, naming
// them: another model type, a normalizer, another pre-tokenizer or decoder. The post_processor (BOS/EOS
// templates) is not applied: prepare separates documents with end_of_text() itself. Truncation and padding
// are not applied either.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <optional>
#include <stdexcept>

#include "data/byte_alphabet.hpp"
#include "data/hf_added_tokens.hpp"
#include "data/hf_bpe_model.hpp"
#include "data/hf_pretokenizer.hpp"
#include "data/tokenizer.hpp"

namespace gradsweep::data {
namespace {

using nlohmann::json;

// Tried in this order when no end-of-text token is named: GPT-2's and Llama-3's.
constexpr const char* kDefaultEndOfText[] = {"<|endoftext|>", "<|end_of_text|>"};

const json& field(const json& obj, const char* key) {
  static const json null_value;
  const auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

std::string type_name(const json& part) {
  const json& type = part.is_object() ? field(part, "type") : part;
  return type.is_string() ? type.get<std::string>() : type.dump();
}

// Refused before anything else is read, so that the message names the tokenizer's kind.
void check_kind(const json& hf) {
  if (!hf.is_object()) throw std::invalid_argument("not a tokenizer.json object");
  const json& model = field(hf, "model");
  if (!model.is_object()) throw std::invalid_argument("tokenizer.json has no \"model\" object");
  if (type_name(model) != "BPE") {
    throw std::invalid_argument("model type \"" + type_name(model) +
                                "\" is not supported: gradsweep reads byte-level BPE tokenizers only (model type BPE)");
  }
  if (!field(hf, "normalizer").is_null()) {
    throw std::invalid_argument("normalizer \"" + type_name(field(hf, "normalizer")) +
                                "\" is not supported (byte-level BPE tokenizers have none)");
  }
  const json& decoder = field(hf, "decoder");
  if (type_name(decoder) != "ByteLevel") {
    throw std::invalid_argument("decoder \"" + type_name(decoder) + "\" is not supported (expected ByteLevel)");
  }
}

class HfTokenizer final : public Tokenizer {
 public:
  // `eot_token`: the token between documents; empty: the first of kDefaultEndOfText that exists.
  HfTokenizer(json hf, const std::string& eot_token)
      : hf_((check_kind(hf), std::move(hf))),
        added_(field(hf_, "added_tokens")),
        pre_tokenizer_(field(hf_, "pre_tokenizer")),
        model_(field(hf_, "model")) {
    vocab_size_ = std::max<int64_t>(model_.max_id(), added_.max_id()) + 1;
    choose_end_of_text(eot_token);
  }

  std::string name() const override { return "hf"; }
  int64_t vocab_size() const override { return vocab_size_; }
  int32_t end_of_text() const override { return end_of_text_; }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;
    for (const HfAddedTokens::Segment& segment : added_.split(text)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        continue;
      }
      pieces.clear();
      pre_tokenizer_.split(segment.text, pieces);
      for (const std::string& piece : pieces) model_.encode(piece, ids);
    }
    return ids;
  }

  // As tokenizers' decode(ids, skip_special_tokens=False) with the ByteLevel decoder: an added token is its
  // content; a model token its bytes, or its text as written where it is not in the byte alphabet.
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text, bytes;
    for (const int32_t id : ids) {
      if (const HfAddedTokens::Token* added = added_.find(id)) {
        text.append(added->content);
      } else if (const std::string* token = model_.token(id)) {
        text.append(try_from_byte_level(*token, bytes) ? bytes : *token);
      } else {
        throw std::out_of_range("hf tokenizer: id " + std::to_string(id) + " is not in the vocabulary");
      }
    }
    return text;
  }

  // The original tokenizer.json, whole: the data set can be decoded, or the tokenizer handed back to
  // `tokenizers`, without the file it came from.
  json to_json() const override {
    return {{"name", "hf"}, {"vocab_size", vocab_size_}, {"end_of_text_token", end_of_text_token_}, {"tokenizer", hf_}};
  }

 private:
  std::optional<int32_t> id_of(const std::string& content) const {
    if (const HfAddedTokens::Token* added = added_.find(content)) return added->id;
    return model_.id(to_byte_level(content));
  }

  void choose_end_of_text(const std::string& eot_token) {
    if (!eot_token.empty()) {
      const auto id = id_of(eot_token);
      if (!id) throw std::invalid_argument("end-of-text token \"" + eot_token + "\" is not in the vocabulary");
      end_of_text_token_ = eot_token;
      end_of_text_ = *id;
      return;
    }
    for (const char* candidate : kDefaultEndOfText) {
      if (const auto id = id_of(candidate)) {
        end_of_text_token_ = candidate;
        end_of_text_ = *id;
        return;
      }
    }
    throw std::invalid_argument(
        "no \"<|endoftext|>\" or \"<|end_of_text|>\" token to place between documents: name one with --eot-token");
  }

  json hf_;
  HfAddedTokens added_;
  HfPreTokenizer pre_tokenizer_;
  HfBpeModel model_;
  int64_t vocab_size_ = 0;
  std::string end_of_text_token_;
  int32_t end_of_text_ = -1;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open Hugging Face tokenizer.json");
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& tokenizer_json,
                                             const std::string& eot_token) {
  json hf;
  try {
    hf = json::parse(read_file(tokenizer_json));
  } catch (const json::exception& e) {
    throw std::runtime_error(tokenizer_json.string() + ": not valid JSON: " + e.what());
  }
  try {
    return std::make_unique<HfTokenizer>(std::move(hf), eot_token);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(tokenizer_json.string() + ": " + e.what());
  } catch (const json::exception& e) {
    throw std::invalid_argument(tokenizer_json.string() + ": unexpected layout: " + e.what());
  }
}

std::unique_ptr<Tokenizer> hf_tokenizer_from_json(const json& description) {
  const json& hf = field(description, "tokenizer");
  const json& eot = field(description, "end_of_text_token");
  if (!hf.is_object() || !eot.is_string()) {
    throw std::invalid_argument("hf tokenizer description needs \"tokenizer\" and \"end_of_text_token\"");
  }
  return std::make_unique<HfTokenizer>(hf, eot.get<std::string>());
}

}  // namespace gradsweep::data

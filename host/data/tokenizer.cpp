#include "data/tokenizer.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gradsweep::data {

std::unique_ptr<Tokenizer> load_tokenizer(const nlohmann::json& description) {
  if (!description.is_object() || !description.contains("name") || !description["name"].is_string()) {
    throw std::invalid_argument("tokenizer description has no \"name\" (expected byte, word, bpe or hf)");
  }
  const std::string name = description["name"].get<std::string>();
  if (name == "byte") return byte_tokenizer_from_json(description);
  if (name == "word") return word_tokenizer_from_json(description);
  if (name == "bpe") return bpe_tokenizer_from_json(description);
  if (name == "hf") return hf_tokenizer_from_json(description);
  throw std::invalid_argument("unknown tokenizer \"" + name + "\" (expected byte, word, bpe or hf)");
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open tokenizer file");
  try {
    return load_tokenizer(nlohmann::json::parse(in));
  } catch (const std::exception& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

}  // namespace gradsweep::data

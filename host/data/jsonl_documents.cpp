#include "data/jsonl_documents.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gradsweep::data {
namespace {

// A value's JSON type as a user reads it in an error message.
std::string type_name(const nlohmann::json& value) {
  if (value.is_number()) return "a number";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "a string";
}

// The keys a line has, so that a wrong --field is corrected at once: `id, title, body`.
std::string key_list(const nlohmann::json& object) {
  std::string keys;
  for (const auto& item : object.items()) keys += (keys.empty() ? "" : ", ") + item.key();
  return keys.empty() ? "none" : keys;
}

bool is_blank(const std::string& line) { return line.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

int64_t for_each_jsonl_document(const std::filesystem::path& file, const std::string& field,
                                const std::function<void(std::string&&)>& on_document) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot open input file");
  std::string line;
  int64_t bytes = 0;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    bytes += static_cast<int64_t>(line.size()) + (in.eof() ? 0 : 1);
    if (is_blank(line)) continue;
    const std::string where = file.string() + ":" + std::to_string(number) + ": ";
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(where + "not valid JSON (" + e.what() + ")");
    }
    if (!record.is_object()) throw std::runtime_error(where + "holds " + type_name(record) + ", not a JSON object");
    const auto value = record.find(field);
    if (value == record.end()) {
      throw std::runtime_error(where + "has no field \"" + field + "\" (its keys: " + key_list(record) +
                               "; --field names the one holding the text)");
    }
    if (!value->is_string())
      throw std::runtime_error(where + "field \"" + field + "\" is " + type_name(*value) + ", not a string");
    std::string document = value->get<std::string>();
    if (!document.empty()) on_document(std::move(document));
  }
  if (in.bad()) throw std::runtime_error(file.string() + ": read failed");
  return bytes;
}

}  // namespace gradsweep::data

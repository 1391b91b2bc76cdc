// Word tokenizer: the K most frequent words of the training text, for small word-level language models
// (the PTB-style setting of the gradient-compression papers).
//
// Splitting, byte by byte:
//  - a word is a run of ASCII letters and digits and bytes >= 0x80 (so UTF-8 letters stay inside words),
//    with apostrophes allowed between two word bytes ("don't" is one word);
//  - every other printable ASCII byte is punctuation and a token of its own ("!!" is two tokens);
//  - a newline is <eos> (one per line end, as in PTB); other whitespace and control bytes separate tokens.
// With `lowercase`, ASCII letters are lowercased before counting and before lookup.
//
// Ids: 0 = <unk> (any word not kept), 1 = <eos>, then words by descending count, ties broken by byte-wise
// comparison, so that fitting the same text always gives the same ids.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "data/tokenizer.hpp"

namespace gradsweep::data {
namespace {

constexpr int32_t kUnk = 0;
constexpr int32_t kEos = 1;
constexpr const char* kUnkText = "<unk>";
constexpr const char* kEosText = "<eos>";

bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

bool is_punctuation(unsigned char c) { return c > ' ' && c < 0x7f && !is_word_byte(c); }

// Calls on_word(std::string) for each word or punctuation mark and on_eos() for each newline.
template <class OnWord, class OnEos>
void split_words(std::string_view text, bool lowercase, OnWord&& on_word, OnEos&& on_eos) {
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      on_eos();
      ++i;
    } else if (is_word_byte(c)) {
      size_t j = i + 1;
      while (j < n) {
        const auto d = static_cast<unsigned char>(text[j]);
        if (is_word_byte(d)) {
          ++j;
        } else if (d == '\'' && j + 1 < n && is_word_byte(static_cast<unsigned char>(text[j + 1]))) {
          j += 2;
        } else {
          break;
        }
      }
      std::string word(text.substr(i, j - i));
      if (lowercase) {
        for (char& ch : word) {
          if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
        }
      }
      on_word(std::move(word));
      i = j;
    } else if (is_punctuation(c)) {
      on_word(std::string(1, static_cast<char>(c)));
      ++i;
    } else {
      ++i;  // space, tab, carriage return, other control bytes (fortunes' overstrike backspaces)
    }
  }
}

class WordTokenizer final : public Tokenizer {
 public:
  WordTokenizer(std::vector<std::string> words, bool lowercase) : words_(std::move(words)), lowercase_(lowercase) {
    if (words_.size() < 2 || words_[kUnk] != kUnkText || words_[kEos] != kEosText) {
      throw std::invalid_argument("word tokenizer: the vocabulary must start with \"<unk>\", \"<eos>\"");
    }
    for (size_t id = 0; id < words_.size(); ++id) {
      if (!ids_.emplace(words_[id], static_cast<int32_t>(id)).second) {
        throw std::invalid_argument("word tokenizer: word \"" + words_[id] + "\" appears twice");
      }
    }
  }

  std::string name() const override { return "word"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(words_.size()); }
  int32_t end_of_text() const override { return kEos; }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    split_words(
        text, lowercase_,
        [&](std::string word) {
          const auto it = ids_.find(word);
          ids.push_back(it == ids_.end() ? kUnk : it->second);
        },
        [&] { ids.push_back(kEos); });
    return ids;
  }

  // Lossy: words joined by single spaces, <eos> as a newline.
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    bool line_start = true;
    for (const int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) {
        throw std::out_of_range("word tokenizer: id " + std::to_string(id) + " is outside [0, " +
                                std::to_string(vocab_size()) + ")");
      }
      if (id == kEos) {
        text.push_back('\n');
        line_start = true;
        continue;
      }
      if (!line_start) text.push_back(' ');
      text.append(words_[id]);
      line_start = false;
    }
    return text;
  }

  nlohmann::json to_json() const override {
    return {{"name", "word"}, {"vocab_size", vocab_size()}, {"lowercase", lowercase_}, {"words", words_}};
  }

 private:
  std::vector<std::string> words_;  // id -> word
  std::unordered_map<std::string, int32_t> ids_;
  bool lowercase_;
};

}  // namespace

void WordCounts::add(std::string_view document) {
  split_words(
      document, lowercase_, [&](std::string word) { ++counts_[std::move(word)]; }, [] {});
}

std::unique_ptr<Tokenizer> WordCounts::fit(const WordTokenizerOptions& options) const {
  if (options.vocab_size < 2) {
    throw std::invalid_argument("word tokenizer: vocabulary size " + std::to_string(options.vocab_size) +
                                " leaves no room for <unk> and <eos> (need at least 2)");
  }
  std::vector<std::pair<std::string, int64_t>> ranked(counts_.begin(), counts_.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const auto keep = std::min<size_t>(ranked.size(), static_cast<size_t>(options.vocab_size - 2));
  std::vector<std::string> words{kUnkText, kEosText};
  words.reserve(keep + 2);
  for (size_t i = 0; i < keep; ++i) words.push_back(std::move(ranked[i].first));
  return std::make_unique<WordTokenizer>(std::move(words), lowercase_);
}

std::unique_ptr<Tokenizer> fit_word_tokenizer(const std::vector<std::string>& documents,
                                              const WordTokenizerOptions& options) {
  WordCounts counts(options.lowercase);
  for (const std::string& doc : documents) counts.add(doc);
  return counts.fit(options);
}

std::unique_ptr<Tokenizer> word_tokenizer_from_json(const nlohmann::json& description) {
  if (!description.contains("words") || !description["words"].is_array()) {
    throw std::invalid_argument("word tokenizer description has no \"words\" array");
  }
  return std::make_unique<WordTokenizer>(description["words"].get<std::vector<std::string>>(),
                                         description.value("lowercase", false));
}

}  // namespace gradsweep::data

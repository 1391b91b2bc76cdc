#include "data/hf_added_tokens.hpp"
#include "data/json_flag.hpp"

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gradsweep::data {
namespace {

using nlohmann::json;

// Rust's char::is_whitespace (Unicode White_Space), which tokenizers' lstrip/rstrip use.
bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// The code point of the UTF-8 character at text[i..i+len) (the text is valid UTF-8 where this is asked).
uint32_t code_point(std::string_view text, size_t i, size_t len) {
  const auto c = static_cast<unsigned char>(text[i]);
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return cp;
}

size_t char_length(unsigned char c) { return c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4; }

// Where the run of whitespace that ends at `end` starts (lstrip).
size_t whitespace_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    if (!is_whitespace(code_point(text, start, end - start))) break;
    end = start;
  }
  return end;
}

// Where the run of whitespace that starts at `start` ends (rstrip).
size_t whitespace_end(std::string_view text, size_t start) {
  while (start < text.size()) {
    const size_t len = std::min(char_length(static_cast<unsigned char>(text[start])), text.size() - start);
    if (!is_whitespace(code_point(text, start, len))) break;
    start += len;
  }
  return start;
}

}  // namespace

HfAddedTokens::HfAddedTokens(const json& added_tokens) {
  if (added_tokens.is_null()) return;
  if (!added_tokens.is_array()) throw std::invalid_argument("\"added_tokens\" is not a list");
  for (const json& entry : added_tokens) {
    const auto id = entry.find("id");
    const auto content = entry.find("content");
    if (!entry.is_object() || id == entry.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        id->get<int64_t>() >= INT32_MAX || content == entry.end() || !content->is_string()) {
      throw std::invalid_argument("added_tokens entry " + entry.dump() +
                                  " has no integer \"id\" and string \"content\"");
    }
    // tokenizers ignores an added token without content: it could never match.
    if (content->get<std::string>().empty()) continue;
    if (json_flag(entry, "single_word", false)) {
      throw std::invalid_argument("added token " + content->dump() +
                                  " has \"single_word\": true, which is not supported");
    }
    Token token{content->get<std::string>(), static_cast<int32_t>(id->get<int64_t>()),
                json_flag(entry, "normalized", true), json_flag(entry, "lstrip", false),
                json_flag(entry, "rstrip", false)};
    if (by_content_.count(token.content) > 0 || by_id_.count(token.id) > 0) {
      throw std::invalid_argument("added token " + content->dump() + " (id " + std::to_string(token.id) +
                                  ") repeats another's content or id");
    }
    by_content_.emplace(token.content, tokens_.size());
    by_id_.emplace(token.id, tokens_.size());
    max_id_ = std::max(max_id_, token.id);
    Pass& pass = token.normalized ? normalized_ : raw_;
    pass.by_first_byte[static_cast<unsigned char>(token.content[0])].push_back(tokens_.size());
    pass.empty = false;
    tokens_.push_back(std::move(token));
  }
  // Longest first, so that the first token that matches at a position is the longest there.
  for (Pass* pass : {&raw_, &normalized_}) {
    for (auto& list : pass->by_first_byte) {
      std::stable_sort(list.begin(), list.end(),
                       [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
    }
  }
}

size_t HfAddedTokens::match_at(const Pass& pass, std::string_view text, size_t at) const {
  for (const size_t index : pass.by_first_byte[static_cast<unsigned char>(text[at])]) {
    if (text.compare(at, tokens_[index].content.size(), tokens_[index].content) == 0) return index + 1;
  }
  return 0;
}

void HfAddedTokens::split_pass(const Pass& pass, std::string_view text, std::vector<Segment>& out) const {
  size_t done = 0;  // end of the last segment appended
  size_t at = 0;
  while (at < text.size()) {
    const size_t match = match_at(pass, text, at);
    if (match == 0) {
      ++at;
      continue;
    }
    const Token& token = tokens_[match - 1];
    size_t start = at, stop = at + token.content.size();
    // lstrip never reaches into the previous match (or what its rstrip took).
    if (token.lstrip) start = std::max(whitespace_start(text, start), done);
    if (token.rstrip) stop = whitespace_end(text, stop);
    if (start > done) out.push_back({text.substr(done, start - done), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    done = at = stop;
  }
  if (done < text.size()) out.push_back({text.substr(done), -1});
}

std::vector<HfAddedTokens::Segment> HfAddedTokens::split(std::string_view text) const {
  std::vector<Segment> segments;
  if (text.empty()) return segments;
  if (raw_.empty) {
    segments.push_back({text, -1});
  } else {
    split_pass(raw_, text, segments);
  }
  if (normalized_.empty) return segments;
  std::vector<Segment> out;
  for (const Segment& segment : segments) {
    if (segment.id >= 0) {
      out.push_back(segment);
    } else {
      split_pass(normalized_, segment.text, out);
    }
  }
  return out;
}

const HfAddedTokens::Token* HfAddedTokens::find(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

const HfAddedTokens::Token* HfAddedTokens::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace gradsweep::data

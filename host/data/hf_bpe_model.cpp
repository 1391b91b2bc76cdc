#include "data/hf_bpe_model.hpp"
#include "data/merge_pair.hpp"

#include <climits>
#include <nlohmann/json.hpp>
#include <queue>
#include <stdexcept>

#include "data/byte_alphabet.hpp"

namespace gradsweep::data {
namespace {

using nlohmann::json;

// obj[key], or null when absent: tokenizers writes every field, but hand-made files may leave defaults out.
const json& field(const json& obj, const char* key) {
  static const json null_value;
  const auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// The options of tokenizers' BPE that change ids in ways gradsweep does not reproduce.
void refuse_unsupported(const json& model) {
  const json& type = field(model, "type");
  if (!type.is_string()) throw std::invalid_argument("model has no \"type\" (expected \"BPE\")");
  if (type != "BPE") {
    throw std::invalid_argument("model type " + in_quotes(type.get<std::string>()) +
                                " is not supported: gradsweep reads byte-level BPE tokenizers only (model type BPE)");
  }
  const json& dropout = field(model, "dropout");
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0)) {
    throw std::invalid_argument("model.dropout " + dropout.dump() +
                                " is not supported (BPE dropout draws different ids on every call)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& affix = field(model, key);
    if (!affix.is_null() && !(affix.is_string() && affix.get<std::string>().empty())) {
      throw std::invalid_argument(std::string("model.") + key + " " + affix.dump() +
                                  " is not supported (byte-level BPE has none)");
    }
  }
  if (field(model, "byte_fallback").is_boolean() && field(model, "byte_fallback").get<bool>()) {
    throw std::invalid_argument(
        "model.byte_fallback true is not supported (that is SentencePiece's BPE, not byte-level)");
  }
}

}  // namespace

HfBpeModel::HfBpeModel(const json& model) {
  if (!model.is_object()) throw std::invalid_argument("tokenizer.json has no \"model\" object");
  refuse_unsupported(model);
  read_vocab(field(model, "vocab"));
  read_merges(field(model, "merges"));
  const json& ignore = field(model, "ignore_merges");
  ignore_merges_ = ignore.is_boolean() && ignore.get<bool>();
  const json& fuse = field(model, "fuse_unk");
  fuse_unk_ = fuse.is_boolean() && fuse.get<bool>();
  const json& unk = field(model, "unk_token");
  // tokenizers complains about an unk_token missing from the vocabulary only when it needs it: so do we.
  if (unk.is_string()) unk_id_ = id(unk.get<std::string>()).value_or(-1);
}

void HfBpeModel::read_vocab(const json& vocab) {
  if (!vocab.is_object() || vocab.empty()) throw std::invalid_argument("model.vocab is not an object of token -> id");
  for (const auto& [spelled, id_json] : vocab.items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() >= INT32_MAX) {
      throw std::invalid_argument("model.vocab: the id of " + in_quotes(spelled) + " is not an integer in [0, 2^31-1)");
    }
    const auto id = static_cast<int32_t>(id_json.get<int64_t>());
    if (static_cast<size_t>(id) >= id_to_token_.size()) id_to_token_.resize(static_cast<size_t>(id) + 1);
    if (!id_to_token_[id].empty()) {
      throw std::invalid_argument("model.vocab: id " + std::to_string(id) + " is used by both " +
                                  in_quotes(id_to_token_[id]) + " and " + in_quotes(spelled));
    }
    id_to_token_[id] = spelled;
    vocab_.emplace(spelled, id);
  }
  for (int b = 0; b < 256; ++b) {
    byte_id_[b] = id(to_byte_level(std::string(1, static_cast<char>(b)))).value_or(-1);
  }
}

// Both spellings tokenizers reads: "left right" (before 0.20, and GPT-2's files) and [left, right] (0.20 on,
// which allows tokens with spaces). As in tokenizers, "#version" lines are skipped and a pair listed twice
// takes its later rank.
void HfBpeModel::read_merges(const json& merges) {
  if (!merges.is_array()) throw std::invalid_argument("model.merges is not a list");
  int32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    const std::string where = "model.merges entry " + std::to_string(i + 1) + " (" + m.dump() + ")";
    if (m.is_string()) {
      const std::string line = m.get<std::string>();
      if (line.rfind("#version", 0) == 0) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        throw std::invalid_argument(where + ": expected \"left right\"");
      }
      add_merge(line.substr(0, space), line.substr(space + 1), rank++, where);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      add_merge(m[0].get<std::string>(), m[1].get<std::string>(), rank++, where);
    } else {
      throw std::invalid_argument(where + ": expected \"left right\" or [left, right]");
    }
  }
}

void HfBpeModel::add_merge(const std::string& left, const std::string& right, int32_t rank, const std::string& where) {
  const auto look_up = [&](const std::string& token) {
    const auto found = id(token);
    if (!found) throw std::invalid_argument(where + ": " + in_quotes(token) + " is not in model.vocab");
    return *found;
  };
  const int32_t l = look_up(left), r = look_up(right), merged = look_up(left + right);
  merges_[merge_pair_key(l, r)] = {rank, merged};
}

std::optional<int32_t> HfBpeModel::id(const std::string& spelled) const {
  const auto it = vocab_.find(spelled);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* HfBpeModel::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || id_to_token_[id].empty()) return nullptr;
  return &id_to_token_[id];
}

void HfBpeModel::encode(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const auto whole = id(to_byte_level(piece))) {
      ids.push_back(*whole);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  bool after_unk = false;  // the previous symbol is an unk that fuse_unk may extend
  for (const char c : piece) {
    const int32_t byte_id = byte_id_[static_cast<unsigned char>(c)];
    if (byte_id >= 0) {
      symbols.push_back(byte_id);
      after_unk = false;
      continue;
    }
    if (unk_id_ < 0) {
      throw std::invalid_argument("byte " + std::to_string(static_cast<unsigned char>(c)) +
                                  " has no token in the vocabulary and the model has no unk_token");
    }
    if (!(fuse_unk_ && after_unk)) symbols.push_back(unk_id_);
    after_unk = true;
  }
  merge_all(symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

// tokenizers' Word::merge_all (models/bpe/word.rs), without dropout: symbols form a linked list over the
// byte positions; a queue entry names the left position of a pair, and goes stale when that position has been
// merged away or now holds a different pair.
void HfBpeModel::merge_all(std::vector<int32_t>& symbols) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2) return;
  struct Symbol {
    int32_t id, prev, next;
    bool removed;
  };
  struct Candidate {
    int32_t rank, pos, merged;
  };
  // priority_queue puts the "largest" first: make that the lowest rank, then the leftmost position.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  std::vector<Symbol> s(n);
  for (int32_t i = 0; i < n; ++i) s[i] = {symbols[i], i - 1, i + 1 < n ? i + 1 : -1, false};
  const auto consider = [&](int32_t left, int32_t right) {
    const auto it = merges_.find(merge_pair_key(s[left].id, s[right].id));
    if (it != merges_.end()) queue.push({it->second.first, left, it->second.second});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = s[top.pos];
    if (left.removed || left.next < 0) continue;
    Symbol& right = s[left.next];
    const auto it = merges_.find(merge_pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.second != top.merged) continue;
    left.id = top.merged;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) s[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev, top.pos);
    if (left.next >= 0) consider(top.pos, left.next);
  }
  symbols.clear();
  for (const Symbol& symbol : s) {
    if (!symbol.removed) symbols.push_back(symbol.id);
  }
}

}  // namespace gradsweep::data

// The "model" of a Hugging Face tokenizer.json of type BPE, byte-level: its vocabulary (token spelled in GPT-2's
// byte alphabet -> id), its merges in priority order, and the merge loop of tokenizers' BPE::merge_word.
//
// tokenizers merges with a priority queue of (rank, position): the lowest rank first, and among equal ranks
// the leftmost; a merge creates new pairs with its neighbours, queued in turn. We keep that exact loop rather
// than share tokenizer_bpe.cpp's (encoder.py's "best pair everywhere, repeat"): the two agree on vocabularies
// whose merges are listed after the tokens they use, as every trained one is, but only the queue agrees on all.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gradsweep::data {

class HfBpeModel {
 public:
  // `model`: tokenizer.json's "model" object. Throws std::invalid_argument naming what is not supported: a
  // type other than BPE (WordPiece, Unigram, WordLevel), dropout, byte fallback, subword prefixes or suffixes;
  // or what is malformed: a merge whose tokens or result are not in the vocabulary, an id used twice.
  explicit HfBpeModel(const nlohmann::json& model);

  // Appends the ids of one pre-token, given as raw bytes. With ignore_merges (Llama-3 sets it), a pre-token
  // that is itself in the vocabulary is one id. A byte without a token becomes unk_token; without one, it is
  // refused with std::invalid_argument (tokenizers would drop it silently, losing text).
  void encode(std::string_view piece, std::vector<int32_t>& ids) const;

  // The token of `id` in the file's spelling, or nullptr if no token has that id.
  const std::string* token(int32_t id) const;
  // The id of a token in the file's spelling.
  std::optional<int32_t> id(const std::string& spelled) const;
  // The largest id of the vocabulary (-1 if it is empty).
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  void read_vocab(const nlohmann::json& vocab);
  void read_merges(const nlohmann::json& merges);
  void add_merge(const std::string& left, const std::string& right, int32_t rank, const std::string& where);
  void merge_all(std::vector<int32_t>& symbols) const;

  std::unordered_map<std::string, int32_t> vocab_;                    // spelled token -> id
  std::vector<std::string> id_to_token_;                              // id -> spelled token ("" for an unused id)
  int32_t byte_id_[256];                                              // the one-byte token of each byte, -1 if none
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged id)
  bool ignore_merges_ = false;
  int32_t unk_id_ = -1;  // -1: no unk_token
  bool fuse_unk_ = false;
};

}  // namespace gradsweep::data

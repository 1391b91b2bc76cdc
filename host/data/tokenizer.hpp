// Text <-> token ids. A prepared data set stores its tokenizer as JSON (out_dir/tokenizer.json) so that the
// same ids can be decoded later (samples, debugging) without the files it was built from.
//
// Four kinds, one file each:
//   byte  (tokenizer_byte.cpp): the 256 byte values plus one end-of-text id; no fitting, no unknowns.
//   word  (tokenizer_word.cpp): the K most frequent words of the training text, <unk> and <eos>.
//   bpe   (tokenizer_bpe.cpp):  GPT-2's byte-level BPE from encoder.json + vocab.bpe.
//   hf    (tokenizer_hf.cpp):   a Hugging Face tokenizer.json of the byte-level BPE kind (GPT-2, Llama-3).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gradsweep::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // "byte", "word", "bpe" or "hf": the key of to_json() that load_tokenizer() dispatches on.
  virtual std::string name() const = 0;
  // Ids are in [0, vocab_size()).
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // The id placed between documents in a prepared data set.
  virtual int32_t end_of_text() const = 0;
  // Everything needed to rebuild this tokenizer: {"name": ..., ...}.
  virtual nlohmann::json to_json() const = 0;
};

// Rebuilds a tokenizer from its to_json(). Throws std::invalid_argument on an unknown name or a malformed
// description.
std::unique_ptr<Tokenizer> load_tokenizer(const nlohmann::json& description);
// Same, from a tokenizer.json file; errors name the file.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::filesystem::path& path);

// --- byte (tokenizer_byte.cpp) ---
std::unique_ptr<Tokenizer> make_byte_tokenizer();

// --- word (tokenizer_word.cpp) ---
struct WordTokenizerOptions {
  // Total ids including <unk> (id 0) and <eos> (id 1), so a model's embedding has exactly this many rows.
  int64_t vocab_size = 10000;
  bool lowercase = false;
};
// Counts words over `documents` and keeps the most frequent (ties: byte-wise smaller word first).
std::unique_ptr<Tokenizer> fit_word_tokenizer(const std::vector<std::string>& documents,
                                              const WordTokenizerOptions& options);
// The same, one document at a time: prepare streams a corpus that need not fit in memory. Memory is one
// count per distinct word, which grows with the vocabulary of the text, not its length.
class WordCounts {
 public:
  explicit WordCounts(bool lowercase) : lowercase_(lowercase) {}
  void add(std::string_view document);
  // Throws std::invalid_argument if options.vocab_size < 2 (no room for <unk> and <eos>).
  std::unique_ptr<Tokenizer> fit(const WordTokenizerOptions& options) const;

 private:
  bool lowercase_;
  std::unordered_map<std::string, int64_t> counts_;
};

// --- bpe (tokenizer_bpe.cpp) ---
// `encoder_json` maps GPT-2's byte-to-unicode token strings to ids; `merges` is vocab.bpe (a "#version"
// line, then one "left right" merge per line, highest priority first). Errors name the file and line.
std::unique_ptr<Tokenizer> load_bpe_tokenizer(const std::filesystem::path& encoder_json,
                                              const std::filesystem::path& merges);

// --- hf (tokenizer_hf.cpp) ---
// A Hugging Face tokenizer.json whose model is BPE over GPT-2's byte alphabet: pre_tokenizer ByteLevel, or a
// Sequence of Isolated Splits then ByteLevel; no normalizer; decoder ByteLevel. Ids equal `tokenizers`'
// encode(text, add_special_tokens=False). `eot_token` is the token placed between documents; empty: the
// added token "<|endoftext|>", else "<|end_of_text|>". Throws std::invalid_argument naming the file and what
// is not supported (a WordPiece, Unigram or WordLevel model, a normalizer, another pre-tokenizer, ...) or
// malformed; std::runtime_error naming the file if it cannot be read or is not JSON.
std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::filesystem::path& tokenizer_json,
                                             const std::string& eot_token = "");

// Builders behind load_tokenizer(), one per kind (each defined in its tokenizer's file).
std::unique_ptr<Tokenizer> byte_tokenizer_from_json(const nlohmann::json& description);
std::unique_ptr<Tokenizer> word_tokenizer_from_json(const nlohmann::json& description);
std::unique_ptr<Tokenizer> bpe_tokenizer_from_json(const nlohmann::json& description);
std::unique_ptr<Tokenizer> hf_tokenizer_from_json(const nlohmann::json& description);

}  // namespace gradsweep::data

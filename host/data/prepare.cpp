#include "data/prepare.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "util/atomic_file.hpp"
#include "data/corpus.hpp"
#include "data/token_shard.hpp"
#include "data/tokenizer.hpp"

namespace gradsweep::data {
namespace {

void validate(const PrepareOptions& o) {
  if (o.inputs.empty()) throw std::invalid_argument("prepare: no --input given");
  if (o.out_dir.empty()) throw std::invalid_argument("prepare: no --out directory given");
  if (o.tokenizer != "byte" && o.tokenizer != "word" && o.tokenizer != "bpe") {
    throw std::invalid_argument("prepare: unknown tokenizer \"" + o.tokenizer + "\" (expected byte, word or bpe)");
  }
  if (o.tokenizer == "bpe" && (o.bpe_encoder.empty() || o.bpe_merges.empty())) {
    throw std::invalid_argument(
        "prepare: --tokenizer bpe needs --bpe-encoder encoder.json and --bpe-merges vocab.bpe "
        "(GPT-2's files: scripts/gpt2_vocab_dir.sh prints where .venv has them, see docs/data.md)");
  }
  if (o.tokenizer == "word" && (o.vocab < 2 || o.vocab > kShardMaxVocab)) {
    throw std::invalid_argument("prepare: --vocab " + std::to_string(o.vocab) + " is outside [2, " +
                                std::to_string(kShardMaxVocab) + "] (ids are stored as uint16)");
  }
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw std::invalid_argument("prepare: validation fraction " + std::to_string(o.val_fraction) +
                                " is outside [0, 1)");
  }
}

// How many of `documents` (the last ones) go to validation.
int64_t validation_count(int64_t documents, double fraction) {
  if (fraction <= 0.0) return 0;
  if (documents < 2) {
    throw std::runtime_error("prepare: " + std::to_string(documents) +
                             " document(s) cannot be split into train and validation (use --val-fraction 0)");
  }
  const auto n = static_cast<int64_t>(std::llround(static_cast<double>(documents) * fraction));
  return std::clamp<int64_t>(n, 1, documents - 1);
}

std::unique_ptr<Tokenizer> make_tokenizer(const PrepareOptions& o, const std::vector<Document>& documents,
                                          int64_t train_documents) {
  if (o.tokenizer == "byte") return make_byte_tokenizer();
  if (o.tokenizer == "bpe") return load_bpe_tokenizer(o.bpe_encoder, o.bpe_merges);
  std::vector<std::string> train_text;
  train_text.reserve(static_cast<size_t>(train_documents));
  for (int64_t i = 0; i < train_documents; ++i) train_text.push_back(documents[i].text);
  return fit_word_tokenizer(train_text, WordTokenizerOptions{o.vocab, o.lowercase});
}

// Documents [first, last), each preceded by end-of-text: the model learns that a document may start after
// it, and a sequence that straddles two documents sees where one ends.
std::vector<int32_t> encode_documents(const Tokenizer& tokenizer, const std::vector<Document>& documents, int64_t first,
                                      int64_t last) {
  std::vector<int32_t> tokens;
  for (int64_t i = first; i < last; ++i) {
    tokens.push_back(tokenizer.end_of_text());
    const std::vector<int32_t> ids = tokenizer.encode(documents[i].text);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }
  return tokens;
}

// Fisher-Yates with mt19937_64, written out because std::shuffle's order differs between standard
// libraries: the same seed must give the same data set everywhere.
void shuffle_documents(std::vector<Document>& documents, int64_t seed) {
  if (seed < 0) return;
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
  for (size_t i = documents.size(); i > 1; --i) std::swap(documents[i - 1], documents[rng() % i]);
}

}  // namespace

PrepareResult prepare_corpus(const PrepareOptions& options) {
  validate(options);
  Corpus corpus = read_corpus(options.inputs);
  shuffle_documents(corpus.documents, options.shuffle_seed);
  const auto documents = static_cast<int64_t>(corpus.documents.size());
  if (documents == 0) throw std::runtime_error("prepare: the inputs contain no text");
  const int64_t val_documents = validation_count(documents, options.val_fraction);
  const int64_t train_documents = documents - val_documents;
  spdlog::info("prepare: {} documents in {} file(s); tokenizing with {}", documents, corpus.sources.size(),
               options.tokenizer);

  const std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(options, corpus.documents, train_documents);
  if (tokenizer->vocab_size() > kShardMaxVocab) {
    throw std::runtime_error("prepare: tokenizer vocabulary of " + std::to_string(tokenizer->vocab_size()) +
                             " ids does not fit the uint16 shard format (at most " + std::to_string(kShardMaxVocab) +
                             ")");
  }
  const std::vector<int32_t> train = encode_documents(*tokenizer, corpus.documents, 0, train_documents);
  const std::vector<int32_t> val = encode_documents(*tokenizer, corpus.documents, train_documents, documents);

  PrepareResult result;
  result.sources = corpus.sources;
  result.tokenizer = tokenizer->name();
  result.vocab_size = tokenizer->vocab_size();
  result.train_documents = train_documents;
  result.val_documents = val_documents;
  result.train_tokens = static_cast<int64_t>(train.size());
  result.val_tokens = static_cast<int64_t>(val.size());
  result.train_path = options.out_dir / "train.bin";
  result.val_path = options.out_dir / "val.bin";
  result.tokenizer_path = options.out_dir / "tokenizer.json";
  result.dataset_path = options.out_dir / "dataset.json";

  write_token_shard(result.train_path, train);
  write_token_shard(result.val_path, val);
  util::write_file_atomically(result.tokenizer_path, tokenizer->to_json().dump() + "\n");

  // ordered_json: keys stay in the order written, so the file reads top-down (format, sources, options, ...).
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (size_t s = 0; s < corpus.sources.size(); ++s) {
    sources.push_back({{"path", std::filesystem::absolute(corpus.sources[s]).lexically_normal().string()},
                       {"bytes", corpus.source_bytes[s]},
                       {"documents", corpus.source_documents[s]}});
  }
  nlohmann::ordered_json options_json = {
      {"tokenizer", options.tokenizer}, {"val_fraction", options.val_fraction}, {"shuffle_seed", options.shuffle_seed}};
  if (options.tokenizer == "word") {
    options_json["vocab"] = options.vocab;
    options_json["lowercase"] = options.lowercase;
  }
  if (options.tokenizer == "bpe") {
    options_json["bpe_encoder"] = std::filesystem::absolute(options.bpe_encoder).string();
    options_json["bpe_merges"] = std::filesystem::absolute(options.bpe_merges).string();
  }
  const nlohmann::ordered_json dataset = {
      {"format", {{"name", "llm.c token shard"}, {"magic", kShardMagic}, {"version", kShardVersion}}},
      {"sources", sources},
      {"options", options_json},
      {"tokenizer", {{"name", result.tokenizer}, {"file", "tokenizer.json"}}},
      {"vocab_size", result.vocab_size},
      {"end_of_text", tokenizer->end_of_text()},
      {"documents", {{"train", train_documents}, {"val", val_documents}}},
      {"tokens", {{"train", result.train_tokens}, {"val", result.val_tokens}}},
      {"files", {{"train", "train.bin"}, {"val", "val.bin"}, {"tokenizer", "tokenizer.json"}}}};
  // Last: a directory with dataset.json holds a complete data set, even if an earlier prepare was killed.
  util::write_file_atomically(result.dataset_path, dataset.dump(2) + "\n");
  return result;
}

}  // namespace gradsweep::data

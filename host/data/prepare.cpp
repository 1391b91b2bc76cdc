#include "data/prepare.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/corpus.hpp"
#include "data/document_spool.hpp"
#include "data/split_writer.hpp"
#include "data/token_shard.hpp"
#include "data/tokenizer.hpp"
#include "util/atomic_file.hpp"

namespace gradsweep::data {
namespace fs = std::filesystem;
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
  if (o.tokenizer == "word" && (o.vocab < 2 || o.vocab > kShardMaxVocab32)) {
    throw std::invalid_argument("prepare: --vocab " + std::to_string(o.vocab) + " is outside [2, " +
                                std::to_string(kShardMaxVocab32) + "] (ids are stored as uint16 or uint32)");
  }
  if (!(o.val_fraction >= 0.0 && o.val_fraction < 1.0)) {
    throw std::invalid_argument("prepare: validation fraction " + std::to_string(o.val_fraction) +
                                " is outside [0, 1)");
  }
  if (o.shard_tokens < 0 || o.shard_tokens > kShardMaxTokens) {
    throw std::invalid_argument("prepare: --shard-tokens " + std::to_string(o.shard_tokens) + " is outside [0, " +
                                std::to_string(kShardMaxTokens) + "] (0: one file per split)");
  }
  if (o.shuffle_bucket_bytes <= 0) throw std::invalid_argument("prepare: the shuffle bucket size must be positive");
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

// The word vocabulary is counted over the training documents only (the first train_documents of the
// shuffled order): one pass over the spool before the encoding pass.
std::unique_ptr<Tokenizer> make_tokenizer(const PrepareOptions& o, DocumentSpool& spool, int64_t train_documents) {
  if (o.tokenizer == "byte") return make_byte_tokenizer();
  if (o.tokenizer == "bpe") return load_bpe_tokenizer(o.bpe_encoder, o.bpe_merges);
  WordCounts counts(o.lowercase);
  spool.for_each([&](int64_t position, const std::string& doc) {
    if (position < train_documents) counts.add(doc);
  });
  return counts.fit(WordTokenizerOptions{o.vocab, o.lowercase});
}

// What the inputs hold, each document spooled as it is read.
struct Sources {
  std::vector<fs::path> files;
  std::vector<int64_t> bytes, documents;
};

Sources spool_sources(const std::vector<fs::path>& files, DocumentSpool& spool) {
  Sources sources{files, {}, {}};
  for (const fs::path& file : files) {
    int64_t documents = 0;
    sources.bytes.push_back(for_each_document(file, [&](std::string&& doc) {
      spool.add(doc);
      ++documents;
    }));
    sources.documents.push_back(documents);
  }
  return sources;
}

int64_t total_bytes(const std::vector<fs::path>& files) {
  int64_t bytes = 0;
  for (const fs::path& f : files) bytes += static_cast<int64_t>(fs::file_size(f));
  return bytes;
}

nlohmann::ordered_json shard_records(const std::vector<ShardRecord>& records) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& r : records) list.push_back({{"file", r.file}, {"tokens", r.tokens}, {"max_id", r.max_id}});
  return list;
}

nlohmann::ordered_json options_json(const PrepareOptions& options) {
  nlohmann::ordered_json o = {{"tokenizer", options.tokenizer},
                              {"val_fraction", options.val_fraction},
                              {"shuffle_seed", options.shuffle_seed},
                              {"shard_tokens", options.shard_tokens}};
  if (options.tokenizer == "word") {
    o["vocab"] = options.vocab;
    o["lowercase"] = options.lowercase;
  }
  if (options.tokenizer == "bpe") {
    o["bpe_encoder"] = fs::absolute(options.bpe_encoder).string();
    o["bpe_merges"] = fs::absolute(options.bpe_merges).string();
  }
  return o;
}

// dataset.json: ordered_json, so the file reads top-down (format, sources, options, ...). "shards" lists
// every shard with its largest id, which planning checks against the model without reading the shards.
void write_dataset_json(const PrepareOptions& options, const PrepareResult& result, const Sources& sources,
                        const Tokenizer& tokenizer, const std::vector<ShardRecord>& train,
                        const std::vector<ShardRecord>& val) {
  nlohmann::ordered_json source_list = nlohmann::ordered_json::array();
  for (size_t s = 0; s < sources.files.size(); ++s) {
    source_list.push_back({{"path", fs::absolute(sources.files[s]).lexically_normal().string()},
                           {"bytes", sources.bytes[s]},
                           {"documents", sources.documents[s]}});
  }
  const bool wide = result.token_bytes == 4;
  const nlohmann::ordered_json dataset = {
      {"format",
       {{"name", "llm.c token shard"},
        {"magic", wide ? kShardMagic32 : kShardMagic},
        {"version", wide ? kShardVersion32 : kShardVersion},
        {"token_bytes", result.token_bytes}}},
      {"sources", source_list},
      {"options", options_json(options)},
      {"tokenizer", {{"name", result.tokenizer}, {"file", "tokenizer.json"}}},
      {"vocab_size", result.vocab_size},
      {"end_of_text", tokenizer.end_of_text()},
      {"documents", {{"train", result.train_documents}, {"val", result.val_documents}}},
      {"tokens", {{"train", result.train_tokens}, {"val", result.val_tokens}}},
      {"files",
       {{"train", result.train_path.filename().string()},
        {"val", result.val_path.filename().string()},
        {"tokenizer", "tokenizer.json"}}},
      {"shards", {{"train", shard_records(train)}, {"val", shard_records(val)}}}};
  // Last: a directory with dataset.json holds a complete data set, even if an earlier prepare was killed.
  util::write_file_atomically(result.dataset_path, dataset.dump(2) + "\n");
}

}  // namespace

// Removes the output directory on a failure if this run created it and left it empty (the spool is made in
// it before the inputs are known to hold text): a refused prepare leaves nothing behind.
struct CreatedDirectory {
  fs::path dir;
  bool existed;
  bool done = false;
  ~CreatedDirectory() {
    std::error_code ignored;
    if (!done && !existed && fs::is_empty(dir, ignored)) fs::remove(dir, ignored);
  }
};

PrepareResult prepare_corpus(const PrepareOptions& options) {
  validate(options);
  const std::vector<fs::path> files = find_text_files(options.inputs);
  CreatedDirectory out{options.out_dir, fs::exists(options.out_dir)};
  DocumentSpool spool(options.out_dir / (".prepare-spool." + std::to_string(::getpid())), total_bytes(files),
                      options.shuffle_bucket_bytes, options.shuffle_seed);
  const Sources sources = spool_sources(files, spool);
  const int64_t documents = spool.size();
  if (documents == 0) throw std::runtime_error("prepare: the inputs contain no text");
  PrepareResult result;
  result.val_documents = validation_count(documents, options.val_fraction);
  result.train_documents = documents - result.val_documents;
  spdlog::info("prepare: {} documents in {} file(s), shuffled in {} bucket(s); tokenizing with {}", documents,
               files.size(), spool.buckets(), options.tokenizer);

  const std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(options, spool, result.train_documents);
  if (tokenizer->vocab_size() > kShardMaxVocab32) {
    throw std::runtime_error("prepare: tokenizer vocabulary of " + std::to_string(tokenizer->vocab_size()) +
                             " ids does not fit even the uint32 shard format");
  }
  result.sources = files;
  result.tokenizer = tokenizer->name();
  result.vocab_size = tokenizer->vocab_size();
  result.token_bytes = token_bytes_for_vocab(result.vocab_size);

  SplitWriter train(options.out_dir, "train", result.token_bytes, options.shard_tokens);
  SplitWriter val(options.out_dir, "val", result.token_bytes, options.shard_tokens);
  // Each document preceded by end-of-text: the model learns that a document may start after it, and a
  // sequence that straddles two documents sees where one ends.
  spool.for_each([&](int64_t position, const std::string& doc) {
    SplitWriter& out = position < result.train_documents ? train : val;
    out.append(tokenizer->end_of_text());
    for (const int32_t id : tokenizer->encode(doc)) out.append(id);
  });
  result.train_tokens = train.size();
  result.val_tokens = val.size();
  const std::vector<ShardRecord> train_shards = train.finish();
  const std::vector<ShardRecord> val_shards = val.finish();
  result.train_shards = static_cast<int64_t>(train_shards.size());
  result.val_shards = static_cast<int64_t>(val_shards.size());
  result.train_path = options.out_dir / train.entry();
  result.val_path = options.out_dir / val.entry();
  result.tokenizer_path = options.out_dir / "tokenizer.json";
  result.dataset_path = options.out_dir / "dataset.json";
  util::write_file_atomically(result.tokenizer_path, tokenizer->to_json().dump() + "\n");
  write_dataset_json(options, result, sources, *tokenizer, train_shards, val_shards);
  out.done = true;
  return result;
}

}  // namespace gradsweep::data

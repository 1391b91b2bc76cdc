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
#include "data/input_files.hpp"
#include "data/jsonl_documents.hpp"
#include "data/split_writer.hpp"
#include "data/token_documents.hpp"
#include "data/token_shard.hpp"
#include "data/tokenizer.hpp"
#include "util/atomic_file.hpp"

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

void validate(const PrepareOptions& o) {
  if (o.inputs.empty()) throw std::invalid_argument("prepare: no --input given");
  if (o.out_dir.empty()) throw std::invalid_argument("prepare: no --out directory given");
  if (o.tokenizer != "byte" && o.tokenizer != "word" && o.tokenizer != "bpe" && o.tokenizer != "hf" &&
      o.tokenizer != "external" && !o.tokenizer.empty()) {
    throw std::invalid_argument("prepare: unknown tokenizer \"" + o.tokenizer +
                                "\" (expected byte, word, bpe or hf; external for pre-tokenized inputs)");
  }
  if (o.tokenizer == "hf" && o.tokenizer_file.empty()) {
    throw std::invalid_argument("prepare: --tokenizer hf needs --tokenizer-file, a Hugging Face tokenizer.json");
  }
  if (o.tokenizer != "hf" && (!o.tokenizer_file.empty() || !o.eot_token.empty())) {
    throw std::invalid_argument("prepare: --tokenizer-file and --eot-token apply to --tokenizer hf only");
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

// What the inputs hold decides the tokenizer: text needs one of ours; token ids bring an external one, of
// which only the vocabulary size and the end-of-text id are known (and needed). `first` is an input file.
void validate_for_inputs(const PrepareOptions& o, const InputFile& first) {
  const std::string file = first.path.string() + " (read as " + input_kind_name(first.kind) + ")";
  if (!holds_tokens(first.kind)) {
    if (o.tokenizer.empty() || o.tokenizer == "external")
      throw std::invalid_argument("prepare: text input " + file + " needs --tokenizer byte, word, bpe or hf" +
                                  (o.tokenizer.empty() ? "" : " (external is for pre-tokenized ids)"));
    if (o.external_vocab_size != 0 || o.external_end_of_text != -1)
      throw std::invalid_argument("prepare: --vocab-size and --eot-id describe pre-tokenized inputs; " + file +
                                  " is text, encoded by --tokenizer " + o.tokenizer);
    return;
  }
  if (!o.tokenizer.empty() && o.tokenizer != "external")
    throw std::invalid_argument("prepare: " + file + " holds token ids already, which --tokenizer " + o.tokenizer +
                                " cannot read: leave --tokenizer out (or give external)");
  if (o.external_vocab_size < 1 || o.external_vocab_size > kShardMaxVocab32)
    throw std::invalid_argument("prepare: pre-tokenized input " + file +
                                " needs --vocab-size N, the vocabulary of the tokenizer that made it, in [1, " +
                                std::to_string(kShardMaxVocab32) + "]");
  if (o.external_end_of_text < 0 || o.external_end_of_text >= o.external_vocab_size)
    throw std::invalid_argument("prepare: pre-tokenized input " + file +
                                " needs --eot-id, the end-of-text id between its documents, in [0, " +
                                std::to_string(o.external_vocab_size) + ")");
}

TokenInputOptions token_input_options(const PrepareOptions& o) {
  return {o.external_vocab_size, o.external_end_of_text, o.raw_token_bytes};
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
  if (o.tokenizer == "hf") return load_hf_tokenizer(o.tokenizer_file, o.eot_token);
  WordCounts counts(o.lowercase);
  spool.for_each([&](int64_t position, const std::string& doc) {
    if (position < train_documents) counts.add(doc);
  });
  return counts.fit(WordTokenizerOptions{o.vocab, o.lowercase});
}

// What the inputs hold, each document spooled as it is read. `tokens` (ids per file) and `holds` ("uint16
// .npy") are for pre-tokenized inputs only.
struct Sources {
  std::vector<InputFile> files;
  std::vector<int64_t> bytes, documents, tokens;
  std::vector<std::string> holds;
};

Sources spool_text_sources(const std::vector<InputFile>& files, const std::string& jsonl_field, DocumentSpool& spool) {
  Sources sources{files, {}, {}, {}, {}};
  for (const InputFile& file : files) {
    int64_t documents = 0;
    const auto add = [&](std::string&& doc) {
      spool.add(doc);
      ++documents;
    };
    sources.bytes.push_back(file.kind == InputKind::jsonl ? for_each_jsonl_document(file.path, jsonl_field, add)
                                                          : for_each_document(file.path, add));
    sources.documents.push_back(documents);
  }
  return sources;
}

// Pre-tokenized ids: each document (its ids, 4 bytes each) spooled and shuffled exactly as text is.
Sources spool_token_sources(const std::vector<InputFile>& files, const TokenInputOptions& options,
                            DocumentSpool& spool) {
  Sources sources{files, {}, {}, {}, {}};
  for (const TokenSource& s : for_each_token_document(files, options, [&](std::string_view doc) { spool.add(doc); })) {
    sources.bytes.push_back(s.bytes);
    sources.documents.push_back(s.documents);
    sources.tokens.push_back(s.tokens);
    sources.holds.push_back(s.description);
  }
  return sources;
}

// The spool's expected size, which sets its bucket count: the text, or 4 bytes per pre-tokenized id. Token
// files are opened and checked here, before the output directory is touched.
int64_t spool_bytes(const std::vector<InputFile>& files, const PrepareOptions& options) {
  if (holds_tokens(files.front().kind)) return 4 * count_token_inputs(files, token_input_options(options));
  int64_t bytes = 0;
  for (const InputFile& f : files) bytes += static_cast<int64_t>(fs::file_size(f.path));
  return bytes;
}

nlohmann::ordered_json shard_records(const std::vector<ShardRecord>& records) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& r : records) list.push_back({{"file", r.file}, {"tokens", r.tokens}, {"max_id", r.max_id}});
  return list;
}

nlohmann::ordered_json options_json(const PrepareOptions& options, const PrepareResult& result,
                                    const Sources& sources) {
  nlohmann::ordered_json o = {{"tokenizer", result.tokenizer},
                              {"input_format", options.input_format},
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
  if (options.tokenizer == "hf") {
    o["tokenizer_file"] = fs::absolute(options.tokenizer_file).string();
    if (!options.eot_token.empty()) o["eot_token"] = options.eot_token;
  }
  const auto any = [&](InputKind kind) {
    return std::any_of(sources.files.begin(), sources.files.end(), [&](const InputFile& f) { return f.kind == kind; });
  };
  if (any(InputKind::jsonl)) o["jsonl_field"] = options.jsonl_field;
  if (any(InputKind::raw)) o["raw_bits"] = 8 * options.raw_token_bytes;
  if (result.tokenizer == "external") {
    o["vocab_size"] = options.external_vocab_size;
    o["eot_id"] = options.external_end_of_text;
  }
  return o;
}

nlohmann::ordered_json source_records(const Sources& sources) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t s = 0; s < sources.files.size(); ++s) {
    nlohmann::ordered_json record = {{"path", fs::absolute(sources.files[s].path).lexically_normal().string()},
                                     {"format", input_kind_name(sources.files[s].kind)},
                                     {"bytes", sources.bytes[s]},
                                     {"documents", sources.documents[s]}};
    if (s < sources.tokens.size()) {
      record["holds"] = sources.holds[s];
      record["tokens"] = sources.tokens[s];
    }
    list.push_back(record);
  }
  return list;
}

// dataset.json: ordered_json, so the file reads top-down (format, sources, options, ...). "shards" lists
// every shard with its largest id, which planning checks against the model without reading the shards.
// An external tokenizer (pre-tokenized inputs) is recorded as such, with no file: gradsweep cannot decode
// its ids, and planning and training need only the shards' largest ids.
void write_dataset_json(const PrepareOptions& options, const PrepareResult& result, const Sources& sources,
                        const std::vector<ShardRecord>& train, const std::vector<ShardRecord>& val) {
  const bool external = result.tokenizer_path.empty();
  nlohmann::ordered_json tokenizer = {{"name", result.tokenizer}};
  tokenizer[external ? "external" : "file"] = external ? nlohmann::ordered_json(true) : "tokenizer.json";
  nlohmann::ordered_json files = {{"train", result.train_path.filename().string()},
                                  {"val", result.val_path.filename().string()}};
  if (!external) files["tokenizer"] = "tokenizer.json";
  const bool wide = result.token_bytes == 4;
  const nlohmann::ordered_json dataset = {
      {"format",
       {{"name", "llm.c token shard"},
        {"magic", wide ? kShardMagic32 : kShardMagic},
        {"version", wide ? kShardVersion32 : kShardVersion},
        {"token_bytes", result.token_bytes}}},
      {"sources", source_records(sources)},
      {"options", options_json(options, result, sources)},
      {"tokenizer", tokenizer},
      {"vocab_size", result.vocab_size},
      {"end_of_text", result.end_of_text},
      {"documents", {{"train", result.train_documents}, {"val", result.val_documents}}},
      {"tokens", {{"train", result.train_tokens}, {"val", result.val_tokens}}},
      {"files", files},
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

namespace {

// The shuffled documents into the two splits, each preceded by end-of-text: the model learns that a document
// may start after it, and a sequence that straddles two documents sees where one ends. `tokenizer` null:
// the documents are pre-tokenized ids (token_documents.hpp).
void write_splits(const PrepareOptions& options, DocumentSpool& spool, const Tokenizer* tokenizer,
                  PrepareResult& result, std::vector<ShardRecord>& train_shards, std::vector<ShardRecord>& val_shards) {
  SplitWriter train(options.out_dir, "train", result.token_bytes, options.shard_tokens);
  SplitWriter val(options.out_dir, "val", result.token_bytes, options.shard_tokens);
  spool.for_each([&](int64_t position, const std::string& doc) {
    SplitWriter& out = position < result.train_documents ? train : val;
    out.append(result.end_of_text);
    if (tokenizer == nullptr) {
      for_each_document_id(doc, [&](int64_t id) { out.append(id); });
    } else {
      for (const int32_t id : tokenizer->encode(doc)) out.append(id);
    }
  });
  result.train_tokens = train.size();
  result.val_tokens = val.size();
  train_shards = train.finish();
  val_shards = val.finish();
  result.train_shards = static_cast<int64_t>(train_shards.size());
  result.val_shards = static_cast<int64_t>(val_shards.size());
  result.train_path = options.out_dir / train.entry();
  result.val_path = options.out_dir / val.entry();
}

}  // namespace

PrepareResult prepare_corpus(const PrepareOptions& options) {
  validate(options);
  const std::vector<InputFile> files = find_input_files(options.inputs, options.input_format);
  validate_for_inputs(options, files.front());  // find_input_files refuses text mixed with token ids
  const bool pretokenized = holds_tokens(files.front().kind);
  const int64_t expected_bytes = spool_bytes(files, options);
  CreatedDirectory out{options.out_dir, fs::exists(options.out_dir)};
  DocumentSpool spool(options.out_dir / (".prepare-spool." + std::to_string(::getpid())), expected_bytes,
                      options.shuffle_bucket_bytes, options.shuffle_seed);
  const Sources sources = pretokenized ? spool_token_sources(files, token_input_options(options), spool)
                                       : spool_text_sources(files, options.jsonl_field, spool);
  const int64_t documents = spool.size();
  if (documents == 0)
    throw std::runtime_error(pretokenized ? "prepare: the inputs contain no ids but end-of-text"
                                          : "prepare: the inputs contain no text");
  PrepareResult result;
  result.val_documents = validation_count(documents, options.val_fraction);
  result.train_documents = documents - result.val_documents;
  spdlog::info("prepare: {} documents in {} file(s), shuffled in {} bucket(s); tokenizing with {}", documents,
               files.size(), spool.buckets(), pretokenized ? "external (pre-tokenized)" : options.tokenizer);

  const std::unique_ptr<Tokenizer> tokenizer =
      pretokenized ? nullptr : make_tokenizer(options, spool, result.train_documents);
  if (tokenizer && tokenizer->vocab_size() > kShardMaxVocab32) {
    throw std::runtime_error("prepare: tokenizer vocabulary of " + std::to_string(tokenizer->vocab_size()) +
                             " ids does not fit even the uint32 shard format");
  }
  for (const InputFile& f : files) result.sources.push_back(f.path);
  result.tokenizer = tokenizer ? tokenizer->name() : "external";
  result.vocab_size = tokenizer ? tokenizer->vocab_size() : options.external_vocab_size;
  result.end_of_text = tokenizer ? tokenizer->end_of_text() : options.external_end_of_text;
  result.token_bytes = token_bytes_for_vocab(result.vocab_size);

  std::vector<ShardRecord> train_shards, val_shards;
  write_splits(options, spool, tokenizer.get(), result, train_shards, val_shards);
  result.dataset_path = options.out_dir / "dataset.json";
  if (tokenizer) {
    result.tokenizer_path = options.out_dir / "tokenizer.json";
    util::write_file_atomically(result.tokenizer_path, tokenizer->to_json().dump() + "\n");
  } else {
    std::error_code ignored;  // an earlier prepare's tokenizer would not be these ids' tokenizer
    fs::remove(options.out_dir / "tokenizer.json", ignored);
  }
  write_dataset_json(options, result, sources, train_shards, val_shards);
  out.done = true;
  return result;
}

}  // namespace gradsweep::data

// `prepare_corpus` on real fortunes files: valid shards that decode back to the source quotations, a val
// split that is the last documents and disjoint from train, a word vocabulary fit on train only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "data/batch_loader.hpp"
#include "data/corpus.hpp"
#include "data/prepare.hpp"
#include "data/token_shard.hpp"
#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using testing::TempDir;

// Three small files (about 60 KB), named out of order: prepare sorts them.
const std::vector<std::string> kFiles = {"tao", "pratchett", "riddles"};

std::vector<std::filesystem::path> fortune_inputs() {
  std::vector<std::filesystem::path> paths;
  for (const auto& name : kFiles) paths.push_back(testing::fortune_file(name));
  return paths;
}

// All quotations of the inputs in prepare's order (sorted file names), split by the test's own splitter.
std::vector<std::string> expected_documents() {
  std::vector<std::string> names = kFiles;
  std::sort(names.begin(), names.end());
  std::vector<std::string> docs;
  for (const auto& name : names) {
    const auto quotes = testing::fortune_quotes(testing::read_file(testing::fortune_file(name)));
    docs.insert(docs.end(), quotes.begin(), quotes.end());
  }
  return docs;
}

// A byte-tokenized shard cut at end-of-text (256) back into document texts.
std::vector<std::string> decode_documents(const std::filesystem::path& shard) {
  const std::vector<int32_t> tokens = read_token_shard(shard);
  EXPECT_TRUE(tokens.empty() || tokens.front() == 256) << shard << " does not start with end-of-text";
  std::vector<std::string> docs;
  for (const int32_t t : tokens) {
    if (t == 256) {
      docs.emplace_back();
    } else {
      docs.back().push_back(static_cast<char>(t));
    }
  }
  return docs;
}

std::vector<std::string> directory_listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Prepare, ByteShardsDecodeToTheSourceQuotationsWithTheLastOnesForValidation) {
  TempDir dir;
  PrepareOptions options;
  options.inputs = fortune_inputs();
  options.out_dir = dir / "data";
  options.tokenizer = "byte";
  options.val_fraction = 0.1;
  options.shuffle_seed = -1;  // file order, so the split is checkable document by document
  const PrepareResult result = prepare_corpus(options);

  const std::vector<std::string> expected = expected_documents();
  const auto n = static_cast<int64_t>(expected.size());
  ASSERT_GT(n, 150);
  const int64_t n_val = std::llround(n * 0.1);
  EXPECT_EQ(result.train_documents, n - n_val);
  EXPECT_EQ(result.val_documents, n_val);
  EXPECT_EQ(result.vocab_size, 257);

  const std::vector<std::string> train = decode_documents(result.train_path);
  const std::vector<std::string> val = decode_documents(result.val_path);
  EXPECT_EQ(train, std::vector<std::string>(expected.begin(), expected.end() - n_val));
  EXPECT_EQ(val, std::vector<std::string>(expected.end() - n_val, expected.end()));
  // Disjoint: no validation quotation also appears in training (these files have no duplicates).
  const std::set<std::string> train_set(train.begin(), train.end());
  for (const auto& doc : val) EXPECT_EQ(train_set.count(doc), 0u) << doc;

  int64_t train_bytes = 0;
  for (const auto& doc : train) train_bytes += static_cast<int64_t>(doc.size()) + 1;
  EXPECT_EQ(result.train_tokens, train_bytes);
  EXPECT_EQ(TokenShard::open(result.train_path).size(), result.train_tokens);
  EXPECT_EQ(TokenShard::open(result.val_path).size(), result.val_tokens);

  EXPECT_EQ(directory_listing(options.out_dir),
            (std::vector<std::string>{"dataset.json", "tokenizer.json", "train.bin", "val.bin"}));
  const auto dataset = nlohmann::json::parse(testing::read_file(result.dataset_path));
  EXPECT_EQ(dataset["documents"]["train"], n - n_val);
  EXPECT_EQ(dataset["tokens"]["val"], result.val_tokens);
  EXPECT_EQ(dataset["vocab_size"], 257);
  EXPECT_EQ(dataset["tokenizer"]["name"], "byte");
  ASSERT_EQ(dataset["sources"].size(), 3u);
  EXPECT_EQ(std::filesystem::path(dataset["sources"][0]["path"].get<std::string>()).filename(), "pratchett");
  EXPECT_EQ(load_tokenizer_file(result.tokenizer_path)->name(), "byte");

  // The shards feed the batch loader as they are.
  const BatchLoader loader(TokenShard::open(result.train_path), BatchLoaderOptions{8, 64, 4, 1, 2});
  EXPECT_GT(loader.num_batches(), 10);
}

TEST(Prepare, ShufflesDocumentsDeterministicallyBeforeTheSplit) {
  TempDir dir;
  PrepareOptions options;
  options.inputs = fortune_inputs();
  options.tokenizer = "byte";
  options.val_fraction = 0.1;
  options.out_dir = dir / "a";
  const PrepareResult a = prepare_corpus(options);
  options.out_dir = dir / "b";
  prepare_corpus(options);
  options.out_dir = dir / "c";
  options.shuffle_seed = 99;
  prepare_corpus(options);

  const std::vector<std::string> expected = expected_documents();
  std::vector<std::string> train = decode_documents(a.train_path);
  const std::vector<std::string> val = decode_documents(a.val_path);
  EXPECT_NE(train, std::vector<std::string>(expected.begin(), expected.begin() + a.train_documents));
  // Same documents, only reordered; same seed, same bytes; another seed, another order.
  std::vector<std::string> all = train;
  all.insert(all.end(), val.begin(), val.end());
  std::vector<std::string> sorted_expected = expected;
  std::sort(all.begin(), all.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  EXPECT_EQ(all, sorted_expected);
  EXPECT_EQ(read_token_shard(dir / "a" / "train.bin"), read_token_shard(dir / "b" / "train.bin"));
  EXPECT_NE(read_token_shard(dir / "a" / "train.bin"), read_token_shard(dir / "c" / "train.bin"));
}

TEST(Prepare, WordVocabularyIsFitOnTrainingDocumentsOnly) {
  TempDir dir;
  PrepareOptions options;
  options.inputs = fortune_inputs();
  options.out_dir = dir.path();
  options.tokenizer = "word";
  options.vocab = 50000;  // larger than the number of distinct words: every train word is kept
  options.lowercase = true;
  options.shuffle_seed = -1;
  const PrepareResult result = prepare_corpus(options);

  const std::vector<std::string> expected = expected_documents();
  const std::vector<std::string> train(expected.begin(), expected.begin() + result.train_documents);
  const auto tokenizer = load_tokenizer_file(result.tokenizer_path);
  EXPECT_EQ(tokenizer->to_json(), fit_word_tokenizer(train, {50000, true})->to_json());
  EXPECT_LT(tokenizer->vocab_size(), 50000);

  // Every train token is known; validation has words never seen in training, which are <unk>.
  const std::vector<int32_t> train_tokens = read_token_shard(result.train_path);
  const std::vector<int32_t> val_tokens = read_token_shard(result.val_path);
  EXPECT_EQ(std::count(train_tokens.begin(), train_tokens.end(), 0), 0);
  EXPECT_GT(std::count(val_tokens.begin(), val_tokens.end(), 0), 0);
  EXPECT_EQ(train_tokens.front(), tokenizer->end_of_text());
}

TEST(Prepare, BpeWithGpt2FilesSeparatesDocumentsWithEndOfText) {
  std::string why;
  const std::filesystem::path vocab_dir = testing::gpt2_vocab_dir(&why);
  if (vocab_dir.empty()) GRADSWEEP_SKIP_UNLESS_CI(why);
  TempDir dir;
  PrepareOptions options;
  options.inputs = {testing::fortune_file("pratchett"), testing::fortune_file("tao")};
  options.out_dir = dir.path();
  options.tokenizer = "bpe";
  options.bpe_encoder = vocab_dir / "encoder.json";
  options.bpe_merges = vocab_dir / "vocab.bpe";
  options.shuffle_seed = -1;  // reading order, so the expected stream is the files' quotations in order
  const PrepareResult result = prepare_corpus(options);
  EXPECT_EQ(result.vocab_size, 50257);

  const auto tokenizer = load_tokenizer_file(result.tokenizer_path);
  const std::vector<int32_t> train = read_token_shard(result.train_path);
  EXPECT_EQ(std::count(train.begin(), train.end(), 50256), result.train_documents);
  // pratchett sorts before tao; the decoded stream is each train quotation after <|endoftext|>.
  std::vector<std::string> docs = testing::fortune_quotes(testing::read_file(testing::fortune_file("pratchett")));
  const auto tao = testing::fortune_quotes(testing::read_file(testing::fortune_file("tao")));
  docs.insert(docs.end(), tao.begin(), tao.end());
  std::string expected;
  for (int64_t i = 0; i < result.train_documents; ++i) expected += "<|endoftext|>" + docs[i];
  EXPECT_EQ(tokenizer->decode(train), expected);
}

TEST(Prepare, RejectsBadOptionsWithClearMessages) {
  TempDir dir;
  PrepareOptions options;
  options.inputs = {testing::fortune_file("pratchett"), testing::fortune_file("tao")};
  options.out_dir = dir.path();
  options.tokenizer = "bpe";
  try {
    prepare_corpus(options);
    ADD_FAILURE() << "bpe without files was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--bpe-encoder"), std::string::npos) << e.what();
  }
  options.tokenizer = "sentencepiece";
  EXPECT_THROW(prepare_corpus(options), std::invalid_argument);
  options.tokenizer = "byte";
  options.val_fraction = 1.0;
  EXPECT_THROW(prepare_corpus(options), std::invalid_argument);
  options.val_fraction = 0.05;
  options.inputs = {dir / "missing.txt"};
  try {
    prepare_corpus(options);
    ADD_FAILURE() << "a missing input was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos) << e.what();
  }
  // Nothing was written by the failed attempts.
  EXPECT_TRUE(directory_listing(dir.path()).empty());
}

}  // namespace
}  // namespace gradsweep::data

// `prepare_corpus` on inputs other than plain text: JSON Lines (the same shards as the same documents given as
// text), pre-tokenized ids (raw, llm.c shards, .npy written here byte by byte; numpy's own files are in
// test_prepare_tokens_process.cpp), and every way such an input is refused: with the file (and line, or
// offset) named and nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "data/input_files.hpp"
#include "data/prepare.hpp"
#include "data/token_shard.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

// The message of what `body` throws (empty, and the test failed, when it does not).
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string bytes_of(const void* data, size_t n) { return std::string(static_cast<const char*>(data), n); }

template <typename T>
void write_ids(const fs::path& path, const std::vector<T>& ids) {
  testing::write_file(path, bytes_of(ids.data(), ids.size() * sizeof(T)));
}

// A .npy file as numpy.lib.format writes version 1.0: magic, version, header length, the dict padded with
// spaces to a 64-byte boundary and ending in a newline, then the data.
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data,
                     const std::string& fortran = "False") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  const auto length = static_cast<uint16_t>(header.size());
  return std::string("\x93NUMPY\x01\x00", 8) + bytes_of(&length, 2) + header + data;
}

PrepareOptions token_options(const std::vector<fs::path>& inputs, const fs::path& out, int64_t vocab, int64_t eot) {
  PrepareOptions o;
  o.inputs = inputs;
  o.out_dir = out;
  o.tokenizer = "";
  o.external_vocab_size = vocab;
  o.external_end_of_text = eot;
  o.shuffle_seed = -1;  // reading order: the output is then the input, checkable id by id
  o.val_fraction = 0;
  return o;
}

// Documents separated by end-of-text 7, as llm.c's scripts write them (each document preceded by it).
const std::vector<uint16_t> kStream = {7, 1, 2, 3, 7, 4, 5, 7, 6, 6, 6, 6, 7, 0, 1};

TEST(PrepareJsonl, GivesTheSameShardsAsTheSameDocumentsAsText) {
  TempDir dir;
  const fs::path fortune = testing::fortune_file("tao");
  // The quotations as the test's own splitter finds them, one JSON object per line with other fields around.
  std::string jsonl;
  int id = 0;
  for (const std::string& quote : testing::fortune_quotes(testing::read_file(fortune)))
    jsonl += nlohmann::json{{"id", id++}, {"text", quote}, {"source", "tao"}}.dump() + "\n";
  testing::write_file(dir / "tao.jsonl", jsonl);
  ASSERT_GT(id, 50);

  PrepareOptions text;
  text.inputs = {fortune};
  text.out_dir = dir / "from-text";
  text.tokenizer = "byte";
  text.val_fraction = 0.1;
  text.shard_tokens = 3000;
  PrepareOptions lines = text;
  lines.inputs = {dir / "tao.jsonl"};  // .jsonl: read as JSON Lines without --input-format
  lines.out_dir = dir / "from-jsonl";
  const PrepareResult a = prepare_corpus(text);
  const PrepareResult b = prepare_corpus(lines);
  EXPECT_EQ(a.train_documents, b.train_documents);
  EXPECT_EQ(a.val_documents, b.val_documents);
  EXPECT_GT(a.train_shards, 3);
  for (const char* split : {"train", "val"})
    for (const auto& shard : fs::directory_iterator(dir / "from-text" / split))
      EXPECT_EQ(testing::read_file(shard.path()),
                testing::read_file(dir / "from-jsonl" / split / shard.path().filename()))
          << shard.path();
  const auto dataset = nlohmann::json::parse(testing::read_file(dir / "from-jsonl" / "dataset.json"));
  EXPECT_EQ(dataset["sources"][0]["format"], "jsonl");
  EXPECT_EQ(dataset["options"]["jsonl_field"], "text");
}

TEST(PrepareJsonl, ABadLineIsNamedWithItsFileLineAndFieldAndNothingIsWritten) {
  TempDir dir;
  const std::string good = R"({"text": "one"})"
                           "\n"
                           R"({"text": "two", "n": 2})"
                           "\n";
  const struct {
    std::string third_line, expected;
  } cases[] = {
      {R"({"body": "three", "id": 3})", "has no field \"text\" (its keys: body, id"},
      {R"({"text": 3})", "field \"text\" is a number, not a string"},
      {R"({"text": "unterminated)", "not valid JSON"},
      {R"(["text"])", "holds an array, not a JSON object"},
  };
  for (const auto& c : cases) {
    testing::write_file(dir / "docs.jsonl", good + c.third_line + "\n" +
                                                R"({"text": "four"})"
                                                "\n");
    PrepareOptions o;
    o.inputs = {dir / "docs.jsonl"};
    o.out_dir = dir / "out";
    o.tokenizer = "byte";
    const std::string what = error_of([&] { prepare_corpus(o); });
    EXPECT_NE(what.find((dir / "docs.jsonl").string() + ":3: "), std::string::npos) << what;
    EXPECT_NE(what.find(c.expected), std::string::npos) << what;
    EXPECT_FALSE(fs::exists(dir / "out")) << "a refused prepare left its output directory";
  }
  // --field names another key; --input-format jsonl reads a file of any name.
  testing::write_file(dir / "docs.txt", R"({"body": "a"})"
                                        "\n\n"
                                        R"({"body": "b"})"
                                        "\n");
  PrepareOptions o;
  o.inputs = {dir / "docs.txt"};
  o.out_dir = dir / "out";
  o.input_format = "jsonl";
  o.jsonl_field = "body";
  o.val_fraction = 0;
  EXPECT_EQ(prepare_corpus(o).train_tokens, 4);  // end-of-text, a, end-of-text, b
}

TEST(PrepareTokens, RawUint32AboveUint16GivesA32BitDataSetOfTheSameIds) {
  TempDir dir;
  const std::vector<uint32_t> stream = {99999, 70000, 1, 65536, 99999, 5, 99998, 99999, 3};
  write_ids(dir / "ids.u32", stream);
  PrepareOptions o = token_options({dir / "ids.u32"}, dir / "out", 100000, 99999);
  o.input_format = "raw";
  o.raw_token_bytes = 4;
  const PrepareResult r = prepare_corpus(o);
  EXPECT_EQ(r.token_bytes, 4);
  EXPECT_EQ(r.tokenizer, "external");
  EXPECT_EQ(r.train_documents, 3);
  const TokenShard train = TokenShard::open(dir / "out" / "train.bin");
  EXPECT_EQ(train.token_bytes(), 4);
  ASSERT_EQ(train.size(), static_cast<int64_t>(stream.size()));
  for (size_t i = 0; i < stream.size(); ++i) EXPECT_EQ(train[static_cast<int64_t>(i)], stream[i]) << i;
  EXPECT_FALSE(fs::exists(dir / "out" / "tokenizer.json"));
  const auto dataset = nlohmann::json::parse(testing::read_file(dir / "out" / "dataset.json"));
  EXPECT_EQ(dataset["tokenizer"]["name"], "external");
  EXPECT_EQ(dataset["tokenizer"]["external"], true);
  EXPECT_EQ(dataset["vocab_size"], 100000);
  EXPECT_EQ(dataset["end_of_text"], 99999);
  EXPECT_EQ(dataset["format"]["token_bytes"], 4);
  EXPECT_EQ(dataset["shards"]["train"][0]["max_id"], 99999);  // the end-of-text id
  EXPECT_EQ(dataset["sources"][0]["holds"], "raw uint32");
}

TEST(PrepareTokens, LlmcShardsAndNpyAcrossFilesAreOneStreamCutAtEndOfText) {
  TempDir dir;
  // An llm.c shard then a .npy (sorted by name): the document 6 6 6 6 starts in one and ends in the other.
  write_token_shard(dir / "a.bin", {7, 1, 2, 3, 7, 4, 5, 7, 6, 6});
  testing::write_file(dir / "b.npy", npy_file("<u2", "(5,)", bytes_of(kStream.data() + 10, 5 * 2)));
  const PrepareResult r = prepare_corpus(token_options({dir.path()}, dir / "out", 8, 7));
  EXPECT_EQ(r.train_documents, 4);
  const std::vector<int32_t> expected(kStream.begin(), kStream.end());
  EXPECT_EQ(read_token_shard(dir / "out" / "train.bin"), expected);
  EXPECT_EQ(r.token_bytes, 2);

  // Shuffled and split like text: every document once, each preceded by end-of-text.
  PrepareOptions shuffled = token_options({dir / "a.bin", dir / "b.npy"}, dir / "shuffled", 8, 7);
  shuffled.shuffle_seed = 3;
  shuffled.val_fraction = 0.25;
  const PrepareResult s = prepare_corpus(shuffled);
  EXPECT_EQ(s.train_documents, 3);
  EXPECT_EQ(s.val_documents, 1);
  std::vector<int32_t> all = read_token_shard(dir / "shuffled" / "train.bin");
  const std::vector<int32_t> val = read_token_shard(dir / "shuffled" / "val.bin");
  EXPECT_EQ(val.front(), 7);
  all.insert(all.end(), val.begin(), val.end());
  std::vector<std::vector<int32_t>> documents;
  for (const int32_t id : all) {
    if (id == 7) {
      documents.emplace_back();
    } else {
      documents.back().push_back(id);
    }
  }
  std::sort(documents.begin(), documents.end());
  EXPECT_EQ(documents, (std::vector<std::vector<int32_t>>{{0, 1}, {1, 2, 3}, {4, 5}, {6, 6, 6, 6}}));
}

TEST(PrepareTokens, AnIdOutsideTheVocabularyIsRefusedWithItsFileAndOffset) {
  TempDir dir;
  testing::write_file(dir / "ids.npy", npy_file("<u2", "(15,)", bytes_of(kStream.data(), 30)));
  const std::string what = error_of([&] { prepare_corpus(token_options({dir / "ids.npy"}, dir / "out", 6, 0)); });
  // kStream[0] = 7 is the first id >= 6: token 0, right after the 128-byte header.
  EXPECT_NE(what.find((dir / "ids.npy").string() + ": id 7 at token 0 (byte offset 128)"), std::string::npos) << what;
  EXPECT_NE(what.find("--vocab-size 6"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "out"));
  // A negative int32 id.
  const std::vector<int32_t> negative = {7, 1, -2};
  testing::write_file(dir / "neg.npy", npy_file("<i4", "(3,)", bytes_of(negative.data(), 12)));
  const std::string neg = error_of([&] { prepare_corpus(token_options({dir / "neg.npy"}, dir / "out", 8, 7)); });
  EXPECT_NE(neg.find("id -2 at token 2 (byte offset 136) is negative"), std::string::npos) << neg;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(PrepareTokens, CorruptFilesAreRefusedWithWhatTheyHold) {
  TempDir dir;
  const std::string ids = bytes_of(kStream.data(), 30);
  const struct {
    std::string name, bytes, expected;
  } cases[] = {
      {"truncated.npy", npy_file("<u2", "(15,)", ids.substr(0, 29)), "truncated or corrupt .npy"},
      {"long.npy", npy_file("<u2", "(14,)", ids), "trailing data"},
      {"cut-header.npy", npy_file("<u2", "(15,)", ids).substr(0, 40), "truncated .npy file"},
      {"magic.npy", "NUMPY" + ids, "not a .npy file"},
      {"float.npy", npy_file("<f4", "(15,)", ids + ids), "dtype '<f4'"},
      {"big.npy", npy_file(">u2", "(15,)", ids), "(big-endian)"},
      {"matrix.npy", npy_file("<u2", "(3, 5)", ids), "2-D array of shape (3, 5)"},
      {"fortran.npy", npy_file("<u2", "(15,)", ids, "True"), "Fortran-ordered"},
      {"truncated.bin", "", "truncated or corrupt shard"},
      {"magic.bin", std::string(1024, '\1') + ids, "bad magic"},
  };
  for (const auto& c : cases) {
    std::string bytes = c.bytes;
    if (c.name == "truncated.bin") {
      write_token_shard(dir / "whole.bin", {kStream.begin(), kStream.end()});
      const std::string whole = testing::read_file(dir / "whole.bin");
      bytes = whole.substr(0, whole.size() - 2);
    }
    testing::write_file(dir / c.name, bytes);
    const std::string what = error_of([&] { prepare_corpus(token_options({dir / c.name}, dir / "out", 8, 7)); });
    EXPECT_NE(what.find((dir / c.name).string() + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(c.expected), std::string::npos) << c.name << ": " << what;
    EXPECT_FALSE(fs::exists(dir / "out")) << c.name;
  }
  // Raw ids whose size is not a whole number of ids.
  testing::write_file(dir / "odd.u16", ids.substr(0, 29));
  PrepareOptions raw = token_options({dir / "odd.u16"}, dir / "out", 8, 7);
  raw.input_format = "raw";
  raw.raw_token_bytes = 2;
  const std::string what = error_of([&] { prepare_corpus(raw); });
  EXPECT_NE(what.find("29 bytes is not a whole number of 16-bit ids"), std::string::npos) << what;
}

TEST(PrepareInputs, GlobsMixturesAndMissingOptionsAreRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  testing::write_file(dir / "a.txt", "some text\n");
  write_ids(dir / "b.npy", std::vector<uint16_t>{});  // not even a header: never read, the mixture is refused
  PrepareOptions o;
  o.out_dir = dir / "out";
  o.tokenizer = "byte";
  o.inputs = {dir / "nothing-*.jsonl"};
  EXPECT_NE(
      error_of([&] { prepare_corpus(o); }).find((dir / "nothing-*.jsonl").string() + ": the glob matches no file"),
      std::string::npos);
  o.inputs = {dir.path()};
  const std::string mixed = error_of([&] { prepare_corpus(o); });
  EXPECT_NE(mixed.find("mix text (" + (dir / "a.txt").string()), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("token ids (" + (dir / "b.npy").string() + ", read as npy)"), std::string::npos) << mixed;
  // A glob that matches: the text file alone.
  o.inputs = {dir / "*.txt"};
  o.val_fraction = 0;
  EXPECT_EQ(prepare_corpus(o).sources, std::vector<fs::path>{dir / "a.txt"});
  fs::remove_all(dir / "out");

  o.tokenizer = "";  // text needs a tokenizer of ours
  EXPECT_NE(error_of([&] { prepare_corpus(o); }).find("needs --tokenizer byte, word, bpe or hf"), std::string::npos);
  write_ids(dir / "ids.u16", kStream);
  PrepareOptions t = token_options({dir / "ids.u16"}, dir / "out", 8, 7);
  t.input_format = "raw";
  t.raw_token_bytes = 2;
  t.tokenizer = "word";
  EXPECT_NE(error_of([&] { prepare_corpus(t); }).find("holds token ids already"), std::string::npos);
  t.tokenizer = "external";
  t.external_end_of_text = 8;
  EXPECT_NE(error_of([&] { prepare_corpus(t); }).find("needs --eot-id"), std::string::npos);
  t.external_end_of_text = 7;
  t.external_vocab_size = 0;
  EXPECT_NE(error_of([&] { prepare_corpus(t); }).find("needs --vocab-size"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace gradsweep::data

// Hugging Face tokenizer.json of the byte-level BPE kind (tokenizer_hf.cpp). Hand-made files check the merge
// loop, ignore_merges, added tokens, the pre-tokenizer's regular expressions and what is refused (always
// run). Files made by the `tokenizers` package (tests/data/hf_tokenizers.py: GPT-2's own tokenizer in its published
// layout, a trained one with and without add_prefix_space, Llama-3's) check that gradsweep's ids are tokenizers' ids on
// every fortunes quotation plus hard cases, and `gradsweep prepare --tokenizer hf` end to end. Those need
// GRADSWEEP_TEST_PYTHON with `tokenizers` (the project's .venv): skipped with the reason without it, failed under CI
// (CI=true).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli/prepare_command.hpp"
#include "data/corpus.hpp"
#include "data/regex_split.hpp"
#include "data/token_shard.hpp"
#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using nlohmann::json;
using testing::TempDir;
namespace fs = std::filesystem;

// --- hand-made tokenizer.json files ---

// A ByteLevel pre-tokenizer as tokenizers writes it.
json byte_level(bool add_prefix_space, bool use_regex) {
  return {
      {"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json added_token(const std::string& content, int id, bool lstrip = false, bool normalized = false) {
  return {{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", false}, {"normalized", normalized}, {"special", true}};
}

// A tiny vocabulary in GPT-2's byte spelling ("Ġ" is the space byte, "Ċ" the newline), as in
// test_tokenizer_bpe.cpp.
json tiny(json merges, json pre_tokenizer = byte_level(false, true), bool ignore_merges = false,
          json added = json::array({added_token("<|endoftext|>", 11)})) {
  const json vocab = json::parse(R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "ab": 4, "bc": 5, "abc": 6,
      "\u0120a": 7, "aa": 8, "aaaa": 9, "\u010a": 10, "<|endoftext|>": 11})");
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", std::move(added)},
          {"normalizer", nullptr},
          {"pre_tokenizer", std::move(pre_tokenizer)},
          {"post_processor", nullptr},
          {"decoder", byte_level(true, true)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", ignore_merges},
            {"vocab", vocab},
            {"merges", std::move(merges)}}}};
}

std::unique_ptr<Tokenizer> load(const TempDir& dir, const json& hf, const std::string& eot = "") {
  testing::write_file(dir / "tokenizer.json", hf.dump());
  return load_hf_tokenizer(dir / "tokenizer.json", eot);
}

// The message of the std::invalid_argument that loading `hf` throws ("" if none).
std::string refusal(const TempDir& dir, const json& hf) {
  try {
    load(dir, hf);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(HfTokenizer, MergesTheBestRankedPairFirstBothMergeSpellings) {
  TempDir dir;
  const json strings = json::array({"a b", "ab c", "\u0120 a", "a a", "aa aa"});
  const json pairs = json::array({{"a", "b"}, {"ab", "c"}, {"\u0120", "a"}, {"a", "a"}, {"aa", "aa"}});
  for (const json& merges : {strings, pairs}) {
    const auto tok = load(dir, tiny(merges));
    EXPECT_EQ(tok->name(), "hf");
    EXPECT_EQ(tok->encode("abc"), std::vector<int32_t>{6});
    EXPECT_EQ(tok->encode("abc abc"), (std::vector<int32_t>{6, 3, 6}));  // " abc": Ġ a b c -> Ġ ab c -> Ġ abc
    EXPECT_EQ(tok->encode(" a"), std::vector<int32_t>{7});
    EXPECT_EQ(tok->encode("aaaaa"), (std::vector<int32_t>{9, 0}));  // equal ranks: leftmost first
    EXPECT_EQ(tok->encode("aaa"), (std::vector<int32_t>{8, 0}));
  }
  // "b c" outranks "a b": abc -> a bc, and no merge joins a with bc.
  EXPECT_EQ(load(dir, tiny(json::array({"b c", "a b", "ab c"})))->encode("abc"), (std::vector<int32_t>{0, 5}));
}

TEST(HfTokenizer, IgnoreMergesEmitsAPreTokenInTheVocabularyWhole) {
  TempDir dir;
  // Only "a b" is a merge, but "abc" is in the vocabulary.
  EXPECT_EQ(load(dir, tiny(json::array({"a b"})))->encode("abc"), (std::vector<int32_t>{4, 2}));
  EXPECT_EQ(load(dir, tiny(json::array({"a b"}), byte_level(false, true), true))->encode("abc"),
            std::vector<int32_t>{6});
}

TEST(HfTokenizer, AddedTokensAreCutOutBeforePreTokenization) {
  TempDir dir;
  const json added = json::array({added_token("<|endoftext|>", 11), added_token("<m>", 12, /*lstrip=*/true),
                                  added_token("<m><m>", 13), added_token("c", 14, false, /*normalized=*/true)});
  const auto tok = load(dir, tiny(json::array({"a b"}), byte_level(false, true), false, added));
  EXPECT_EQ(tok->vocab_size(), 15);  // the largest id + 1, over the vocabulary and the added tokens
  EXPECT_EQ(tok->encode("ab<|endoftext|>a"), (std::vector<int32_t>{4, 11, 0}));
  // Leftmost, then longest.
  EXPECT_EQ(tok->encode("<m><m><m>"), (std::vector<int32_t>{13, 12}));
  // lstrip takes the spaces on the left with the token (and decoding gives the token alone, as tokenizers').
  EXPECT_EQ(tok->encode("a  <m>b"), (std::vector<int32_t>{0, 12, 1}));
  EXPECT_EQ(tok->decode({0, 12, 1}), "a<m>b");
  EXPECT_EQ(tok->encode("a  <m><m>b"), (std::vector<int32_t>{0, 3, 3, 13, 1}));
  // A normalized added token is matched in what the others leave.
  EXPECT_EQ(tok->encode("abc<m>c"), (std::vector<int32_t>{4, 14, 12, 14}));
}

TEST(HfTokenizer, AddPrefixSpaceAppliesToEveryPieceBetweenAddedTokens) {
  TempDir dir;
  const auto tok = load(dir, tiny(json::array({"\u0120 a", "a b"}), byte_level(true, true)));
  EXPECT_EQ(tok->encode("a<|endoftext|>a b"), (std::vector<int32_t>{7, 11, 7, 3, 1}));
}

TEST(HfTokenizer, DecodesBytesAndRoundTripsThroughToJson) {
  TempDir dir;
  const auto tok = load(dir, tiny(json::array({"a b"})));
  EXPECT_EQ(tok->encode("ab\nc"), (std::vector<int32_t>{4, 10, 2}));
  EXPECT_EQ(tok->decode({4, 10, 2, 3, 11}), "ab\nc <|endoftext|>");
  EXPECT_EQ(tok->end_of_text(), 11);
  EXPECT_THROW(tok->decode({12}), std::out_of_range);
  // A byte without a token, and no unk_token: refused, not dropped as tokenizers would.
  EXPECT_THROW(tok->encode("z"), std::invalid_argument);

  const auto reloaded = load_tokenizer(tok->to_json());
  EXPECT_EQ(reloaded->name(), "hf");
  EXPECT_EQ(reloaded->encode("ab\nc a<|endoftext|>"), tok->encode("ab\nc a<|endoftext|>"));
  EXPECT_EQ(reloaded->end_of_text(), 11);
  EXPECT_EQ(reloaded->vocab_size(), tok->vocab_size());
}

TEST(HfTokenizer, EndOfTextIsFoundOrNamed) {
  TempDir dir;
  const json merges = json::array({"a b"});
  const json added = json::array({added_token("<|end_of_text|>", 12), added_token("<|eot_id|>", 13)});
  json llama_like = tiny(merges, byte_level(false, true), false, added);
  EXPECT_EQ(load(dir, llama_like)->end_of_text(), 11);  // "<|endoftext|>" first (here a vocabulary token)
  llama_like["model"]["vocab"].erase("<|endoftext|>");
  EXPECT_EQ(load(dir, llama_like)->end_of_text(), 12);  // then "<|end_of_text|>"
  EXPECT_EQ(load(dir, llama_like, "<|eot_id|>")->end_of_text(), 13);
  EXPECT_EQ(load(dir, llama_like, "ab")->end_of_text(), 4);  // any token, by its text
  EXPECT_EQ(load_tokenizer(load(dir, llama_like, "<|eot_id|>")->to_json())->end_of_text(), 13);
  try {
    load(dir, llama_like, "<|nope|>");
    ADD_FAILURE() << "an unknown --eot-token was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("<|nope|>"), std::string::npos) << e.what();
  }
  llama_like["added_tokens"] = json::array({added_token("<|eot_id|>", 13)});
  const std::string message = refusal(dir, llama_like);
  EXPECT_NE(message.find("--eot-token"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "tokenizer.json").string()), std::string::npos) << message;
}

TEST(HfTokenizer, RefusesWhatItDoesNotReproduceNamingTheFileAndTheType) {
  TempDir dir;
  const std::string file = (dir / "tokenizer.json").string();
  const auto expect_refused = [&](json hf, const std::string& named) {
    const std::string message = refusal(dir, hf);
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(named), std::string::npos) << named << " not in: " << message;
  };
  json wordpiece = tiny(json::array());
  wordpiece["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}}}};
  expect_refused(wordpiece, "\"WordPiece\"");
  json unigram = tiny(json::array());
  unigram["model"]["type"] = "Unigram";
  expect_refused(unigram, "\"Unigram\"");
  json normalizer = tiny(json::array());
  normalizer["normalizer"] = {{"type", "NFC"}};
  expect_refused(normalizer, "\"NFC\"");
  json metaspace = tiny(json::array());
  metaspace["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  expect_refused(metaspace, "\"Metaspace\"");
  const json split = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Removed"}, {"invert", false}};
  expect_refused(tiny(json::array(), {{"type", "Sequence"}, {"pretokenizers", {split, byte_level(false, false)}}}),
                 "\"Removed\"");
  json bad_regex = split;
  bad_regex["behavior"] = "Isolated";
  bad_regex["pattern"] = {{"Regex", "(\\p{L}"}};
  expect_refused(tiny(json::array(), {{"type", "Sequence"}, {"pretokenizers", {bad_regex, byte_level(false, false)}}}),
                 "does not compile");
  json decoder = tiny(json::array());
  decoder["decoder"] = {{"type", "WordPiece"}};
  expect_refused(decoder, "decoder \"WordPiece\"");
  json dropout = tiny(json::array());
  dropout["model"]["dropout"] = 0.1;
  expect_refused(dropout, "dropout");
  expect_refused(tiny(json::array({"a z"})), "\"z\" is not in model.vocab");
  json single_word = tiny(json::array());
  single_word["added_tokens"][0]["single_word"] = true;
  expect_refused(single_word, "single_word");

  testing::write_file(dir / "broken.json", "{\"model\": ");
  EXPECT_THROW(load_hf_tokenizer(dir / "broken.json"), std::runtime_error);
  EXPECT_THROW(load_hf_tokenizer(dir / "missing.json"), std::runtime_error);
}

TEST(RegexSplit, CutsLikeTokenizersSplitIsolated) {
  const auto pieces = [](const RegexSplit& re, std::string_view text) {
    std::vector<std::string_view> views;
    re.split(text, views);
    return std::vector<std::string>(views.begin(), views.end());
  };
  // Expected pieces from tokenizers' Split(Regex(...), "isolated").pre_tokenize_str.
  const RegexSplit llama3(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  EXPECT_EQ(pieces(llama3, "I'M 12345 café—ok\r\n\n  x"),
            (std::vector<std::string>{"I", "'M", " ", "123", "45", " café", "—ok", "\r\n\n", " ", " x"}));
  const RegexSplit gpt2(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  EXPECT_EQ(pieces(gpt2, "Hi  you're ½été 42!"),
            (std::vector<std::string>{"Hi", " ", " you", "'re", " ½", "été", " 42", "!"}));
  // Text between matches is kept; an empty match splits there.
  EXPECT_EQ(pieces(RegexSplit("a+"), "baab"), (std::vector<std::string>{"b", "aa", "b"}));
  EXPECT_EQ(pieces(RegexSplit("x*"), "ab"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pieces(RegexSplit(".", /*literal=*/true), "a.b"), (std::vector<std::string>{"a", ".", "b"}));
  // Invalid UTF-8 matches nothing and stays in the text between matches.
  EXPECT_EQ(pieces(RegexSplit("\\p{L}+"),
                   "ab\xff\xfe"
                   "cd"),
            (std::vector<std::string>{"ab", "\xff\xfe", "cd"}));
  EXPECT_TRUE(pieces(gpt2, "").empty());
}

// --- against the `tokenizers` package ---

struct CommandResult {
  int exit_code;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Text that the fortunes do not have much of: added tokens inside words, contractions in capitals (Llama-3's
// pattern is case-insensitive), runs of digits, non-ASCII letters, digits and spaces, CR LF, the lstrip token.
const std::vector<std::string> kHardCases = {
    "Hello<|endoftext|>World <|endoftext|> again<|end_of_text|>x<|begin_of_text|><|eot_id|>",
    "I'M sure it'S so, DON'T you'LL see we'VE they'RE I'D; don't it's I'm ſ's 'ſ",
    "12345678901 3.14159 1,000,000 2024-12-01 007 ½ ٣٤٥ Ⅳ x²",
    "Déjà vu — naïve café, 東京 1½ ok 🙂 emoji\u00a0nbsp\u3000ideographic\u2028line\u0085next",
    "tabs\tand\r\nCRLF\r\n\n\n  spaces   \n   ",
    "a <mask> b  <mask>c Zork zork ZorkZork <mask>",
    "   leading and trailing   ",
    "\xc2\xa0\xc2\xa0 only odd spaces \xe2\x80\x89",
};

// The documents (every fortunes quotation, as prepare reads them, then kHardCases), the tokenizers
// hf_tokenizers.py made of them, and their ids as tokenizers gives them.
struct Reference {
  std::string why_not;      // non-empty: no reference (no Python or no tokenizers)
  std::string why_no_gpt2;  // non-empty: no GPT-2 tokenizer among them (GPT-2's published files not found)
  fs::path made;            // hf_tokenizers.py's output: NAME.json, wordpiece.json, ids.json
  TempDir dir;              // scratch for the tests' own output
  std::vector<std::string> documents;
  size_t corpus_documents = 0;  // the first documents are the corpus, the rest kHardCases
  json ids;                     // {name: [[ids of document 0], ...]}
  json decoded;                 // {name: [tokenizers' decode of those ids, ...]}
};

// Runs hf_tokenizers.py on `documents` (JSON Lines) unless its output for the same documents, script,
// interpreter and tokenizers version is already in the build tree: ctest runs each test in a process of its own, and
// training takes about 10 s. Made in a staging directory renamed into place, so that tests run in parallel never see
// half.
// With `gpt2_dir` (GPT-2's published files), GPT-2's own tokenizer too.
fs::path run_reference_script(const std::string& python, const std::string& version, const std::string& documents,
                              const fs::path& gpt2_dir) {
  const std::string script = testing::read_file(GRADSWEEP_HF_SCRIPT);
  const fs::path made =
      fs::path(GRADSWEEP_HF_CACHE_DIR) /
      std::to_string(std::hash<std::string>{}(documents + script + python + version + gpt2_dir.string()));
  if (fs::exists(made / "ids.json")) return made;
  const fs::path staging = made.string() + ".staging-" + std::to_string(::getpid());
  fs::remove_all(staging);
  fs::create_directories(staging);
  testing::write_file(staging / "docs.jsonl", documents);
  const CommandResult run =
      run_command(python + " '" + GRADSWEEP_HF_SCRIPT + "' '" + (staging / "docs.jsonl").string() + "' '" +
                  staging.string() + "'" + (gpt2_dir.empty() ? "" : " '" + gpt2_dir.string() + "'"));
  if (run.exit_code != 0) throw std::runtime_error("hf_tokenizers.py failed:\n" + run.output);
  std::error_code raced;  // another test process put its identical copy there first
  fs::rename(staging, made, raced);
  if (raced) fs::remove_all(staging);
  return made;
}

const Reference& reference() {
  static const std::unique_ptr<Reference> made = [] {
    auto r = std::make_unique<Reference>();
    const std::string python = GRADSWEEP_TEST_PYTHON;
    const CommandResult version = run_command(python + " -c 'import tokenizers; print(tokenizers.__version__)'");
    if (version.exit_code != 0) {
      r->why_not = python + " has no `tokenizers` (scripts/install-deps.sh installs it into .venv)";
      return r;
    }
    for (const fs::path& file : find_text_files({testing::fortunes_dir()})) {
      for_each_document(file, [&](std::string&& doc) { r->documents.push_back(std::move(doc)); });
    }
    r->corpus_documents = r->documents.size();
    r->documents.insert(r->documents.end(), kHardCases.begin(), kHardCases.end());
    std::string lines;
    for (const std::string& doc : r->documents) lines += json(doc).dump() + "\n";
    r->made = run_reference_script(python, version.output, lines, testing::gpt2_vocab_dir(&r->why_no_gpt2));
    json made_ids = json::parse(testing::read_file(r->made / "ids.json"));
    r->ids = std::move(made_ids["ids"]);
    r->decoded = std::move(made_ids["decoded"]);
    return r;
  }();
  return *made;
}

#define REQUIRE_REFERENCE()                                        \
  const Reference& ref = reference();                              \
  if (!ref.why_not.empty()) GRADSWEEP_SKIP_UNLESS_CI(ref.why_not); \
  ASSERT_GT(ref.corpus_documents, 10000u) << "the fortunes corpus is missing"

// Where two id lists first differ, for a readable failure.
std::string first_difference(const std::vector<int32_t>& ours, const std::vector<int32_t>& theirs) {
  size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
  const auto window = [&](const std::vector<int32_t>& ids) {
    std::string out;
    for (size_t k = i; k < std::min(ids.size(), i + 8); ++k) out += std::to_string(ids[k]) + " ";
    return out;
  };
  return "first difference at id " + std::to_string(i) + ": gradsweep " + window(ours) + "| tokenizers " +
         window(theirs);
}

class HfTokenizerAgainstTokenizers : public ::testing::TestWithParam<std::string> {};

// Decoding gives tokenizers' decode, which is the document itself except where add_prefix_space put a space.
TEST_P(HfTokenizerAgainstTokenizers, GivesTokenizersIdsOnTheWholeCorpusAndDecodesBack) {
  REQUIRE_REFERENCE();
  const std::string& name = GetParam();
  if (name == "gpt2" && !ref.why_no_gpt2.empty()) GRADSWEEP_SKIP_UNLESS_CI(ref.why_no_gpt2);
  const auto tok = load_hf_tokenizer(ref.made / (name + ".json"));
  const json& expected = ref.ids.at(name);
  ASSERT_EQ(expected.size(), ref.documents.size());
  const bool lossless = name != "bytelevel_prefix";
  size_t mismatches = 0, bad_decodes = 0, tokens = 0;
  for (size_t d = 0; d < ref.documents.size(); ++d) {
    const std::vector<int32_t> ids = tok->encode(ref.documents[d]);
    const auto theirs = expected[d].get<std::vector<int32_t>>();
    tokens += ids.size();
    if (ids != theirs && ++mismatches <= 3) {
      ADD_FAILURE() << name << ": document " << d << " encodes differently, " << first_difference(ids, theirs) << "\n"
                    << ref.documents[d].substr(0, 400);
    }
    const std::string text = tok->decode(ids);
    if ((text != ref.decoded.at(name)[d] || (lossless && text != ref.documents[d])) && ++bad_decodes <= 3) {
      ADD_FAILURE() << name << ": document " << d << " decodes as\n"
                    << text << "\ninstead of\n"
                    << ref.decoded.at(name)[d].get<std::string>();
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << ref.documents.size() << " documents";
  EXPECT_EQ(bad_decodes, 0u) << "of " << ref.documents.size() << " documents";
  EXPECT_GT(tokens, ref.documents.size() * 20);  // merges happened: a document is more than a few tokens
  // The description a prepared data set stores rebuilds the same tokenizer.
  const auto reloaded = load_tokenizer(tok->to_json());
  for (size_t d = ref.corpus_documents; d < ref.documents.size(); ++d) {
    EXPECT_EQ(reloaded->encode(ref.documents[d]), expected[d].get<std::vector<int32_t>>()) << ref.documents[d];
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HfTokenizerAgainstTokenizers,
                         ::testing::Values("bytelevel", "bytelevel_prefix", "llama3", "gpt2"));

TEST(HfTokenizerFromTokenizers, VocabularySizeAndEndOfText) {
  REQUIRE_REFERENCE();
  const auto gpt2_like = load_hf_tokenizer(ref.made / "bytelevel.json");
  EXPECT_EQ(gpt2_like->vocab_size(), 2000);
  EXPECT_EQ(gpt2_like->end_of_text(), 0);  // <|endoftext|>, the trainer's first special token
  const auto llama_like = load_hf_tokenizer(ref.made / "llama3.json");
  EXPECT_EQ(llama_like->vocab_size(), 2003);  // 2000 + <|begin_of_text|>, <|end_of_text|>, <|eot_id|>
  EXPECT_EQ(llama_like->end_of_text(), 2001);
  if (!ref.why_no_gpt2.empty()) GRADSWEEP_SKIP_UNLESS_CI(ref.why_no_gpt2);
  const auto gpt2 = load_hf_tokenizer(ref.made / "gpt2.json");  // GPT-2's published layout
  EXPECT_EQ(gpt2->vocab_size(), 50257);
  EXPECT_EQ(gpt2->end_of_text(), 50256);
}

TEST(HfTokenizerFromTokenizers, RefusesAWordPieceTokenizerNamingItAndTheFile) {
  REQUIRE_REFERENCE();
  const fs::path file = ref.made / "wordpiece.json";
  try {
    load_hf_tokenizer(file);
    ADD_FAILURE() << "a WordPiece tokenizer.json was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("WordPiece"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

// `gradsweep prepare` as the user types it (the command's own parser and callback, in this process).
void prepare(std::vector<std::string> args) {
  CLI::App app{"gradsweep"};
  app.require_subcommand(1);
  cli::register_prepare_command(app);
  args.insert(args.begin(), {"gradsweep", "prepare"});
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(HfTokenizerFromTokenizers, PrepareWritesTokenizersIdsBetweenEndOfTextTokens) {
  REQUIRE_REFERENCE();
  const fs::path out = ref.dir / "prepared";
  ::testing::internal::CaptureStdout();
  // File order, no validation split: train.bin is every document in reading order.
  prepare({"--input", testing::fortunes_dir().string(), "--out", out.string(), "--tokenizer", "hf", "--tokenizer-file",
           (ref.made / "llama3.json").string(), "--eot-token", "<|eot_id|>", "--val-fraction", "0", "--shuffle-seed",
           "-1"});
  const std::string summary = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(summary.find("hf tokenizer (vocab size 2003"), std::string::npos) << summary;

  std::vector<int32_t> expected;
  for (size_t d = 0; d < ref.corpus_documents; ++d) {
    expected.push_back(2002);  // <|eot_id|>
    const auto ids = ref.ids.at("llama3")[d].get<std::vector<int32_t>>();
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  const std::vector<int32_t> written = read_token_shard(out / "train.bin");
  EXPECT_EQ(written.size(), expected.size());
  EXPECT_TRUE(written == expected) << first_difference(written, expected);

  const json dataset = json::parse(testing::read_file(out / "dataset.json"));
  EXPECT_EQ(dataset["tokenizer"]["name"], "hf");
  EXPECT_EQ(dataset["vocab_size"], 2003);
  EXPECT_EQ(dataset["end_of_text"], 2002);
  // out/tokenizer.json is gradsweep's description, with tokenizers' file inside it.
  const auto reloaded = load_tokenizer_file(out / "tokenizer.json");
  EXPECT_EQ(reloaded->end_of_text(), 2002);
  EXPECT_EQ(reloaded->encode(kHardCases[0]), ref.ids.at("llama3")[ref.corpus_documents].get<std::vector<int32_t>>());
  const json described = json::parse(testing::read_file(out / "tokenizer.json"));
  EXPECT_EQ(described["tokenizer"], json::parse(testing::read_file(ref.made / "llama3.json")));
}

TEST(HfTokenizerFromTokenizers, PrepareRefusesAnUnsupportedTokenizerNamingTheFile) {
  REQUIRE_REFERENCE();
  const fs::path file = ref.made / "wordpiece.json";
  try {
    prepare({"--input", testing::fortune_file("tao").string(), "--out", (ref.dir / "refused").string(), "--tokenizer",
             "hf", "--tokenizer-file", file.string()});
    ADD_FAILURE() << "prepare accepted a WordPiece tokenizer.json";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("WordPiece"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(ref.dir / "refused"));
}

TEST(HfTokenizerPrepareCommand, ValidatesTheHfOptions) {
  TempDir dir;
  const std::string input = testing::fortune_file("tao").string();
  const std::string out = (dir / "out").string();
  try {
    prepare({"--input", input, "--out", out, "--tokenizer", "hf"});
    ADD_FAILURE() << "--tokenizer hf without a file was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(prepare({"--input", input, "--out", out, "--tokenizer", "byte", "--tokenizer-file", input}),
               CLI::ValidationError);
  EXPECT_THROW(prepare({"--input", input, "--out", out, "--tokenizer", "byte", "--eot-token", "x"}),
               CLI::ValidationError);
  EXPECT_THROW(prepare({"--input", input, "--out", out, "--tokenizer", "hf", "--tokenizer-file",
                        (dir / "missing.json").string()}),
               CLI::ValidationError);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace gradsweep::data

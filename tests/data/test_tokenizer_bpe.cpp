// GPT-2 byte-level BPE: the pre-tokenizer, the merge loop on a hand-made vocabulary (always run), and the
// real GPT-2 files (GRADSWEEP_GPT2_VOCAB_DIR's encoder.json and vocab.bpe; see docs/data.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/corpus.hpp"
#include "data/gpt2_pretokenizer.hpp"
#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using testing::TempDir;

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (const auto p : gpt2_pretokenize(text)) out.emplace_back(p);
  return out;
}

// Expected pieces are what the regular expression itself gives (JavaScript's /.../gu, which has \p{L}).
TEST(Gpt2Pretokenizer, CutsAsciiTextExactlyLikeTheRegex) {
  EXPECT_EQ(pieces("Hello world"), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(pieces("I've got 1234 apples, they're   great!!\n\n  ok?  "),
            (std::vector<std::string>{"I", "'ve", " got", " 1234", " apples", ",", " they", "'re", "  ", " great", "!!",
                                      "\n\n ", " ok", "?", "  "}));
  EXPECT_EQ(pieces(" 'Sup? don't\tx\n"), (std::vector<std::string>{" '", "Sup", "?", " don", "'t", "\t", "x", "\n"}));
  EXPECT_EQ(pieces("a1b2 ,,x  'll"), (std::vector<std::string>{"a", "1", "b", "2", " ,,", "x", " ", " '", "ll"}));
  EXPECT_TRUE(pieces("").empty());
}

TEST(Gpt2Pretokenizer, KeepsUtf8CharactersInsideLetterPieces) {
  // The documented approximation: every byte >= 0x80 is a letter, so "café" and "naïve" stay whole.
  EXPECT_EQ(pieces("café naïve"), (std::vector<std::string>{"café", " naïve"}));
}

// A tiny vocabulary in GPT-2's file spelling: "Ġ" is the space byte, "Ċ" the newline byte.
constexpr const char* kTinyEncoder = R"({"a": 0, "b": 1, "c": 2, "\u0120": 3, "ab": 4, "bc": 5, "abc": 6,
  "\u0120a": 7, "aa": 8, "aaaa": 9, "\u010a": 10, "<|endoftext|>": 11})";

std::unique_ptr<Tokenizer> tiny_bpe(const TempDir& dir, const std::string& merges) {
  testing::write_file(dir / "encoder.json", kTinyEncoder);
  testing::write_file(dir / "vocab.bpe", merges);
  return load_bpe_tokenizer(dir / "encoder.json", dir / "vocab.bpe");
}

TEST(BpeTokenizer, MergesTheBestRankedPairFirst) {
  TempDir dir;
  // "a b" outranks "b c": abc -> ab c -> abc.
  const auto ab_first = tiny_bpe(dir, "#version: 0.2\na b\nab c\n\u0120 a\na a\naa aa\n");
  EXPECT_EQ(ab_first->encode("abc"), std::vector<int32_t>{6});
  // " abc": Ġ a b c -> Ġ ab c -> Ġ abc
  EXPECT_EQ(ab_first->encode("abc abc"), (std::vector<int32_t>{6, 3, 6}));
  EXPECT_EQ(ab_first->encode(" a"), std::vector<int32_t>{7});
  // "b c" outranks "a b": abc -> a bc, and no merge joins a with bc.
  const auto bc_first = tiny_bpe(dir, "b c\na b\nab c\n");
  EXPECT_EQ(bc_first->encode("abc"), (std::vector<int32_t>{0, 5}));
}

TEST(BpeTokenizer, MergesEveryOccurrenceOfAPairLeftToRight) {
  TempDir dir;
  const auto tok = tiny_bpe(dir, "a a\naa aa\n");
  EXPECT_EQ(tok->encode("aaaa"), std::vector<int32_t>{9});
  EXPECT_EQ(tok->encode("aaa"), (std::vector<int32_t>{8, 0}));
  EXPECT_EQ(tok->encode("aaaaa"), (std::vector<int32_t>{9, 0}));
}

TEST(BpeTokenizer, MapsBytesThroughGpt2sAlphabetAndRoundTrips) {
  TempDir dir;
  const auto tok = tiny_bpe(dir, "a b\n");
  EXPECT_EQ(tok->encode("ab\nc"), (std::vector<int32_t>{4, 10, 2}));
  EXPECT_EQ(tok->decode({4, 10, 2, 3, 11}), "ab\nc <|endoftext|>");
  EXPECT_EQ(tok->vocab_size(), 12);
  EXPECT_EQ(tok->end_of_text(), 11);
  EXPECT_THROW(tok->encode("z"), std::invalid_argument);  // no token for the byte 'z'
  EXPECT_THROW(tok->decode({12}), std::out_of_range);

  const auto reloaded = load_tokenizer(tok->to_json());
  EXPECT_EQ(reloaded->name(), "bpe");
  EXPECT_EQ(reloaded->encode("ab\nc a"), tok->encode("ab\nc a"));
}

TEST(BpeTokenizer, BadFilesAreReportedWithFileAndLine) {
  TempDir dir;
  try {
    tiny_bpe(dir, "#version: 0.2\na b\na z\n");
    ADD_FAILURE() << "a merge with an unknown token was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "vocab.bpe").string() + " line 3"), std::string::npos) << e.what();
  }
  testing::write_file(dir / "no_eot.json", R"({"a": 0})");
  try {
    load_bpe_tokenizer(dir / "no_eot.json", dir / "vocab.bpe");
    ADD_FAILURE() << "an encoder without <|endoftext|> was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_eot.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("<|endoftext|>"), std::string::npos) << e.what();
  }
  testing::write_file(dir / "broken.json", "{\"a\": ");
  EXPECT_THROW(load_bpe_tokenizer(dir / "broken.json", dir / "vocab.bpe"), std::runtime_error);
  EXPECT_THROW(load_bpe_tokenizer(dir / "missing.json", dir / "vocab.bpe"), std::runtime_error);
}

// --- the real GPT-2 vocabulary ---

std::unique_ptr<Tokenizer> gpt2_or_null(std::string* why) {
  const std::filesystem::path dir = testing::gpt2_vocab_dir(why);
  if (dir.empty()) return nullptr;
  return load_bpe_tokenizer(dir / "encoder.json", dir / "vocab.bpe");
}

TEST(BpeTokenizerGpt2, KnownEncodingsAndFortunesRoundTrip) {
  std::string why;
  const auto tok = gpt2_or_null(&why);
  if (!tok) GRADSWEEP_SKIP_UNLESS_CI(why);

  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->end_of_text(), 50256);
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tok->encode(" the"), std::vector<int32_t>{262});
  // Reference ids from OpenAI's encoder.py (as ported by the npm package gpt-3-encoder).
  EXPECT_EQ(tok->encode("I've got 1234 apples, they're   great!!\n\n  ok?  "),
            (std::vector<int32_t>{40, 1053, 1392, 1105, 2682, 22514, 11, 484, 821, 220, 220, 1049, 3228, 628, 220,
                                  12876, 30, 220, 220}));

  const std::vector<std::string> quotes = split_documents(testing::read_file(testing::fortune_file("computers")));
  ASSERT_GT(quotes.size(), 2u);
  // Quotation 2 of computers: tabs, runs of spaces, digits in parentheses.
  EXPECT_EQ(
      tok->encode(quotes[1]),
      (std::vector<int32_t>{
          8784,  23210, 311,   13775, 317,   42533, 35878, 49,    3185,  49,   4503,  7597, 1581,  198, 197,  7,
          16,    8,     220,   47605, 47114, 329,   1247,  541,   37507, 198,  197,   7,    17,    8,   220,  5542,
          3797,  14093, 198,   197,   7,     18,    8,     220,   23102, 2318, 11489, 274,  198,   197, 7,    19,
          8,     220,   3779,  1381,  198,   197,   7,     20,    8,     220,  12189, 12,   79,    959, 2259, 1027,
          33173, 198,   197,   7,     21,    8,     220,   376,   2150,  385,  2054,  297,  271,   198, 197,  7,
          22,    8,     220,   10352, 29708, 7465,  198,   197,   7,     23,   8,     220,  1041,  301, 6587, 3290,
          28421, 198,   220,   220,   220,   220,   220,   220,   220,   764,  198,   220,  220,   220, 220,  220,
          220,   220,   764,   198,   220,   220,   220,   220,   220,   220,  220,   764,  198,   197, 7,    2079,
          8,     220,   26580, 11376, 3971,  808,   357,   31216, 276,   2157, 16859, 4914, 14998, 669, 8,    198,
          197,   7,     3064,  8,     19900, 11555, 19915, 198,   197,   7,    8784,  8,    20113}));
  for (size_t i = 0; i < 50; ++i) EXPECT_EQ(tok->decode(tok->encode(quotes[i])), quotes[i]) << quotes[i];
  // Non-ASCII text still round-trips (bytes >= 0x80 are letters to the pre-tokenizer).
  const std::string accented = "Déjà vu — naïve café, 東京 1½ ok";
  EXPECT_EQ(tok->decode(tok->encode(accented)), accented);
}

}  // namespace
}  // namespace gradsweep::data

// Word tokenizer: top-K by frequency, <unk> for the rest, <eos> at line ends, deterministic ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "data/corpus.hpp"
#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

std::vector<std::string> words_of(const Tokenizer& tok) {
  return tok.to_json()["words"].get<std::vector<std::string>>();
}

TEST(WordTokenizer, KeepsTheTopKWordsAndTheSpecialIds) {
  // the: 4, cat: 3, dog: 2, bird: 1, "." : 2
  const auto tok = fit_word_tokenizer({"the cat the dog.", "the cat the cat. dog bird"}, {5, false});
  EXPECT_EQ(tok->name(), "word");
  EXPECT_EQ(tok->vocab_size(), 5);
  EXPECT_EQ(words_of(*tok), (std::vector<std::string>{"<unk>", "<eos>", "the", "cat", "."}));
  EXPECT_EQ(tok->end_of_text(), 1);
  // dog ties with "." at 2; "." (0x2E) sorts before "dog" and wins the last place.
  EXPECT_EQ(tok->encode("the dog cat.\nbird"), (std::vector<int32_t>{2, 0, 3, 4, 1, 0}));
}

TEST(WordTokenizer, UnknownWordsBecomeUnk) {
  const auto tok = fit_word_tokenizer({"alpha beta gamma"}, {100, false});
  EXPECT_EQ(tok->vocab_size(), 5);  // fewer words than asked for
  EXPECT_EQ(tok->encode("delta alpha epsilon"), (std::vector<int32_t>{0, tok->encode("alpha")[0], 0}));
  EXPECT_EQ(tok->decode(tok->encode("delta alpha")), "<unk> alpha");
}

TEST(WordTokenizer, TiesAreBrokenByTheWordNotByInputOrder) {
  const auto a = fit_word_tokenizer({"b a c", "c"}, {4, false});
  const auto b = fit_word_tokenizer({"c", "c b a"}, {4, false});
  EXPECT_EQ(words_of(*a), (std::vector<std::string>{"<unk>", "<eos>", "c", "a"}));
  EXPECT_EQ(a->to_json(), b->to_json());
}

TEST(WordTokenizer, SplitsPunctuationKeepsApostrophesAndOptionallyLowercases) {
  const std::string text = "Don't STOP!! don't\tstop, 'quoted'\n";
  const auto cased = fit_word_tokenizer({text}, {100, false});
  EXPECT_EQ(cased->decode(cased->encode(text)), "Don't STOP ! ! don't stop , ' quoted '\n");
  const auto lower = fit_word_tokenizer({text}, {100, true});
  EXPECT_EQ(lower->decode(lower->encode(text)), "don't stop ! ! don't stop , ' quoted '\n");
  EXPECT_LT(lower->vocab_size(), cased->vocab_size());
}

TEST(WordTokenizer, OnFortunesIdsFollowFrequencyAndFittingIsDeterministic) {
  const std::vector<std::string> docs = split_documents(testing::read_file(testing::fortune_file("computers")));
  ASSERT_GT(docs.size(), 500u);
  const auto tok = fit_word_tokenizer(docs, {500, true});
  ASSERT_EQ(tok->vocab_size(), 500);

  // Counting the encoded ids must reproduce the ranking the tokenizer was fit with.
  std::vector<int64_t> counts(500, 0);
  int64_t total = 0;
  for (const auto& doc : docs) {
    for (const int32_t id : tok->encode(doc)) ++counts[id], ++total;
  }
  for (int id = 3; id < 500; ++id) EXPECT_GE(counts[id - 1], counts[id]) << "id " << id;
  EXPECT_GT(counts[0], 0);            // the long tail is <unk>
  EXPECT_LT(counts[0] * 3, total);    // ... but 500 words cover most tokens of English text
  EXPECT_EQ(words_of(*tok)[2], ".");  // the most frequent token of this file
  EXPECT_NE(std::find(words_of(*tok).begin(), words_of(*tok).end(), "the"), words_of(*tok).end());

  // Same documents in another order: the same vocabulary, id for id.
  std::vector<std::string> shuffled = docs;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
  EXPECT_EQ(fit_word_tokenizer(shuffled, {500, true})->to_json(), tok->to_json());

  const auto reloaded = load_tokenizer(tok->to_json());
  EXPECT_EQ(reloaded->encode(docs[7]), tok->encode(docs[7]));
}

TEST(WordTokenizer, RejectsAVocabularyWithoutRoomForSpecials) {
  EXPECT_THROW(fit_word_tokenizer({"a b"}, {1, false}), std::invalid_argument);
  EXPECT_THROW(load_tokenizer(nlohmann::json{{"name", "word"}, {"words", {"a", "b"}}}), std::invalid_argument);
}

}  // namespace
}  // namespace gradsweep::data

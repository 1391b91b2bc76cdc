// Byte tokenizer: lossless on real text, one id past the bytes for end-of-text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

TEST(ByteTokenizer, RoundTripsFortunesText) {
  const auto tok = make_byte_tokenizer();
  // "fortunes" has overstrike backspaces; "startrek" and "computers" are plain ASCII.
  for (const char* name : {"fortunes", "startrek", "computers"}) {
    const std::string text = testing::read_file(testing::fortune_file(name));
    ASSERT_GT(text.size(), 10000u) << name;
    const std::vector<int32_t> ids = tok->encode(text);
    ASSERT_EQ(ids.size(), text.size());
    EXPECT_EQ(ids[0], static_cast<unsigned char>(text[0]));
    for (const int32_t id : ids) ASSERT_TRUE(id >= 0 && id < 256) << id;
    EXPECT_EQ(tok->decode(ids), text) << name;
  }
}

TEST(ByteTokenizer, EveryByteValueRoundTrips) {
  const auto tok = make_byte_tokenizer();
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const auto ids = tok->encode(all);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ids[b], b);
  EXPECT_EQ(tok->decode(ids), all);
}

TEST(ByteTokenizer, EndOfTextIsId256AndDecodesVisibly) {
  const auto tok = make_byte_tokenizer();
  EXPECT_EQ(tok->name(), "byte");
  EXPECT_EQ(tok->vocab_size(), 257);
  EXPECT_EQ(tok->end_of_text(), 256);
  EXPECT_EQ(tok->decode({'a', 256, 'b'}), "a<|endoftext|>b");
  EXPECT_THROW(tok->decode({257}), std::out_of_range);
  EXPECT_THROW(tok->decode({-1}), std::out_of_range);
}

TEST(ByteTokenizer, JsonRoundTrip) {
  const auto tok = load_tokenizer(make_byte_tokenizer()->to_json());
  EXPECT_EQ(tok->name(), "byte");
  EXPECT_EQ(tok->encode("hé"), (std::vector<int32_t>{'h', 0xC3, 0xA9}));
  EXPECT_THROW(load_tokenizer(nlohmann::json{{"name", "sentencepiece"}}), std::invalid_argument);
  EXPECT_THROW(load_tokenizer(nlohmann::json::array()), std::invalid_argument);
}

}  // namespace
}  // namespace gradsweep::data

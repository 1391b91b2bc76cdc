// Token shards: llm.c's byte layout, round trips, every validation error naming the file, atomic writes.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "data/token_shard.hpp"
#include "data/token_shard_writer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using testing::TempDir;

// A shard built byte by byte here, not by write_token_shard(): the reader is checked against the format
// itself, and header fields can be made wrong on purpose.
std::string raw_shard(int32_t magic, int32_t version, int32_t count, const std::vector<uint16_t>& tokens) {
  std::string bytes(1024, '\0');
  const int32_t fields[3] = {magic, version, count};
  std::memcpy(bytes.data(), fields, sizeof(fields));
  for (const uint16_t t : tokens) {
    bytes.push_back(static_cast<char>(t & 0xff));
    bytes.push_back(static_cast<char>(t >> 8));
  }
  return bytes;
}

// Runs `open` expecting std::runtime_error whose message contains every one of `parts`.
void expect_open_error(const std::filesystem::path& path, const std::vector<std::string>& parts) {
  try {
    TokenShard::open(path);
    ADD_FAILURE() << "opening " << path << " did not throw";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(TokenShard, RoundTripKeepsEveryTokenAndTheLlmcLayout) {
  TempDir dir;
  const auto path = dir / "train.bin";
  std::vector<int32_t> tokens{0, 1, 255, 256, 50256, 65535};
  for (int i = 0; i < 1000; ++i) tokens.push_back((i * 7919) % 65536);
  write_token_shard(path, tokens);

  EXPECT_EQ(std::filesystem::file_size(path), 1024 + 2 * tokens.size());
  const std::string bytes = testing::read_file(path);
  int32_t header[256];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], static_cast<int32_t>(tokens.size()));
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0) << "header int " << i;
  // Little-endian uint16 after the header: 50256 = 0xC450.
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024 + 2 * 4]), 0x50);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024 + 2 * 4 + 1]), 0xC4);

  const TokenShard shard = TokenShard::open(path);
  EXPECT_EQ(shard.path(), path);
  ASSERT_EQ(shard.size(), static_cast<int64_t>(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(shard[static_cast<int64_t>(i)], tokens[i]) << i;
  EXPECT_EQ(read_token_shard(path), tokens);
}

TEST(TokenShard, ReadsAShardWrittenByAnotherWriter) {
  TempDir dir;
  testing::write_file(dir / "x.bin", raw_shard(20240520, 1, 3, {7, 65535, 300}));
  EXPECT_EQ(read_token_shard(dir / "x.bin"), (std::vector<int32_t>{7, 65535, 300}));
}

TEST(TokenShard, EmptyShardIsValid) {
  TempDir dir;
  write_token_shard(dir / "empty.bin", {});
  EXPECT_EQ(TokenShard::open(dir / "empty.bin").size(), 0);
}

TEST(TokenShard, MovedShardKeepsTheMapping) {
  TempDir dir;
  write_token_shard(dir / "a.bin", {4, 5, 6});
  TokenShard a = TokenShard::open(dir / "a.bin");
  TokenShard b = std::move(a);
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b[2], 6);
}

TEST(TokenShard, BadMagicNamesTheFile) {
  TempDir dir;
  testing::write_file(dir / "x.bin", raw_shard(12345, 1, 2, {1, 2}));
  expect_open_error(dir / "x.bin",
                    {(dir / "x.bin").string(), "bad magic 12345", "20240520", "not an llm.c token shard"});
}

TEST(TokenShard, BadVersionNamesTheFile) {
  TempDir dir;
  testing::write_file(dir / "v2.bin", raw_shard(20240520, 2, 2, {1, 2}));
  expect_open_error(dir / "v2.bin", {(dir / "v2.bin").string(), "version 2", "expected 1"});
}

TEST(TokenShard, TruncatedBodyNamesTheFileAndBothSizes) {
  TempDir dir;
  write_token_shard(dir / "t.bin", std::vector<int32_t>(100, 42));
  std::filesystem::resize_file(dir / "t.bin", 1024 + 2 * 100 - 1);
  expect_open_error(dir / "t.bin", {(dir / "t.bin").string(), "1223 bytes", "100 tokens", "1224", "truncated"});
}

TEST(TokenShard, TrailingBytesAreAnError) {
  TempDir dir;
  testing::write_file(dir / "long.bin", raw_shard(20240520, 1, 1, {1, 2}));
  expect_open_error(dir / "long.bin", {(dir / "long.bin").string(), "trailing data"});
}

TEST(TokenShard, FileShorterThanTheHeaderNamesTheFile) {
  TempDir dir;
  testing::write_file(dir / "short.bin", std::string(100, 'x'));
  expect_open_error(dir / "short.bin", {(dir / "short.bin").string(), "100 bytes", "1024-byte header"});
}

TEST(TokenShard, MissingFileNamesTheFile) {
  TempDir dir;
  expect_open_error(dir / "nope.bin", {(dir / "nope.bin").string(), "cannot open", "No such file"});
}

TEST(TokenShard, AtomicWriteLeavesNoTemporaryFile) {
  TempDir dir;
  write_token_shard(dir / "s.bin", {1, 2, 3});
  write_token_shard(dir / "s.bin", {4, 5});  // replaces the first
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"s.bin"});
  EXPECT_EQ(read_token_shard(dir / "s.bin"), (std::vector<int32_t>{4, 5}));
}

TEST(TokenShard, TokensOutsideUint16AreRejectedAndNothingIsWritten) {
  TempDir dir;
  write_token_shard(dir / "s.bin", {9});
  EXPECT_THROW(write_token_shard(dir / "s.bin", {1, 65536}), std::invalid_argument);
  EXPECT_THROW(write_token_shard(dir / "s.bin", {-1}), std::invalid_argument);
  try {
    write_token_shard(dir / "s.bin", {1, 2, 70000});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("token 70000 at position 2"), std::string::npos) << e.what();
  }
  // The previous content survives and no temporary file is left behind.
  EXPECT_EQ(read_token_shard(dir / "s.bin"), std::vector<int32_t>{9});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

// llm.c's uint32 layout (dev/data/data_common.py, "llama-3"): magic 20240801, version 7, 4 bytes per token.
TEST(TokenShard, WideIdsUseLlmcsUint32HeaderAndRoundTrip) {
  TempDir dir;
  const std::vector<int32_t> tokens{0, 65535, 65536, 128255, 2000000000};
  write_token_shard(dir / "w.bin", tokens, 4);
  const std::string bytes = testing::read_file(dir / "w.bin");
  ASSERT_EQ(bytes.size(), 1024u + 4 * tokens.size());
  int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof header);
  EXPECT_EQ(header[0], 20240801);
  EXPECT_EQ(header[1], 7);
  EXPECT_EQ(header[2], 5);
  uint32_t third = 0;
  std::memcpy(&third, bytes.data() + 1024 + 8, 4);
  EXPECT_EQ(third, 65536u);
  const TokenShard shard = TokenShard::open(dir / "w.bin");
  EXPECT_EQ(shard.token_bytes(), 4);
  EXPECT_EQ(shard.max_token(), 2000000000);
  EXPECT_EQ(read_token_shard(dir / "w.bin"), tokens);
  EXPECT_THROW(shard.tokens(), std::logic_error);  // no uint16 view of 32-bit ids
  // 16-bit stays the default, and its header is unchanged.
  write_token_shard(dir / "n.bin", {1, 2});
  EXPECT_EQ(TokenShard::open(dir / "n.bin").token_bytes(), 2);
  EXPECT_EQ(testing::read_file(dir / "n.bin").size(), 1024u + 4);
}

TEST(TokenShard, WideShardErrorsNameTheFileAndTheWidth) {
  TempDir dir;
  // magic and version are a pair: 20240801 with version 1 is neither format.
  std::string bytes = raw_shard(20240801, 1, 0, {});
  testing::write_file(dir / "v.bin", bytes);
  expect_open_error(dir / "v.bin", {(dir / "v.bin").string(), "unsupported version 1", "expected 7"});
  // Two uint32 tokens promised, one present (8 bytes of body would be 4 uint16 tokens: still refused).
  bytes = raw_shard(20240801, 7, 2, {1, 0});
  testing::write_file(dir / "t.bin", bytes);
  expect_open_error(dir / "t.bin", {(dir / "t.bin").string(), "truncated", "2 tokens of 4 bytes"});
  testing::write_file(dir / "m.bin", raw_shard(20240521, 1, 0, {}));
  expect_open_error(dir / "m.bin", {(dir / "m.bin").string(), "bad magic 20240521", "20240801"});
}

TEST(TokenShardWriter, StreamsMoreThanItsBufferAndLeavesNothingWhenNotFinished) {
  TempDir dir;
  {
    TokenShardWriter writer(dir / "s.bin", 2);
    for (int64_t i = 0; i < 1500000; ++i) writer.append(i % 65536);  // 3 MB: several buffer flushes
    EXPECT_EQ(writer.max_token(), 65535);
    writer.finish();
  }
  const TokenShard shard = TokenShard::open(dir / "s.bin");
  ASSERT_EQ(shard.size(), 1500000);
  for (int64_t i : {int64_t{0}, int64_t{65536}, int64_t{1499999}}) EXPECT_EQ(shard[i], i % 65536) << i;
  {
    TokenShardWriter abandoned(dir / "a.bin", 4);
    abandoned.append(7);
    EXPECT_THROW(abandoned.append(-1), std::invalid_argument);
  }  // never finished: no a.bin, no temporary file
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

}  // namespace
}  // namespace gradsweep::data

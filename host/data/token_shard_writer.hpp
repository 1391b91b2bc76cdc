// Writing one token shard as a stream (token_shard.hpp has the format): `gradsweep prepare` appends tokens
// as it encodes documents, so a shard of any size costs a fixed buffer, never the shard in memory.
//
// The file appears only complete: tokens go to PATH.tmp.<pid>; finish() writes the header's count, fsyncs,
// and renames it over PATH. A writer destroyed before finish() (an error, a throw while encoding) removes
// its temporary file, so a killed or failed prepare never leaves a shard a run could train on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::data {

class TokenShardWriter {
 public:
  // `token_bytes` 2 (uint16, llm.c's GPT-2 format) or 4 (uint32, its LLaMA-3 format). Creates the parent
  // directory. Throws std::invalid_argument for another width, std::runtime_error naming the file when it
  // cannot be created.
  TokenShardWriter(std::filesystem::path path, int token_bytes);
  TokenShardWriter(const TokenShardWriter&) = delete;
  TokenShardWriter& operator=(const TokenShardWriter&) = delete;
  ~TokenShardWriter();

  // Throws std::invalid_argument naming the file, the token and its position when the token is negative or
  // too wide for the shard, or when the shard already holds 2^31-1 tokens (the header's int32 count).
  void append(int64_t token);
  int64_t size() const { return count_; }
  int token_bytes() const { return token_bytes_; }
  // The largest id appended so far (0 when empty).
  int64_t max_token() const { return max_token_; }
  const std::filesystem::path& path() const { return path_; }

  // Header, flush, fsync, rename over the path, fsync of the directory. Throws std::runtime_error naming the
  // file on a failed write (a full disk).
  void finish();

 private:
  void flush();
  [[noreturn]] void fail(const std::string& what);

  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
  int token_bytes_ = 2;
  int64_t count_ = 0;
  int64_t max_token_ = 0;
  std::vector<char> buffer_;
  bool finished_ = false;
};

}  // namespace gradsweep::data

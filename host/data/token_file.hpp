// A file of token ids made outside gradsweep (by another tokenizer, usually from Python), read in chunks:
//   npy   numpy's .npy format: a 1-D array of little-endian uint16, uint32 or int32 (`np.save`)
//   raw   bare little-endian uint16 or uint32 ids, no header (`a.astype(np.uint16).tofile(path)`)
//   llmc  an llm.c token shard (token_shard.hpp): 16-bit (magic 20240520) or 32-bit (20240801)
// Everything about the file's layout is checked when it is opened, against its size, before an id is read:
// a truncated file, a wrong magic or an array that is not 1-D ids is refused with the file named, and no
// read ever goes past the ids its header (or size) promises. Memory is one chunk, whatever the file's size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/input_files.hpp"

namespace gradsweep::data {

class TokenFileReader {
 public:
  // `kind`: npy, raw or llmc. `raw_token_bytes`: the width of raw ids, 2 or 4 (ignored for the others).
  // Throws std::runtime_error naming the file and what it holds when it is not a valid file of that kind,
  // std::invalid_argument for another kind or width.
  TokenFileReader(std::filesystem::path path, InputKind kind, int raw_token_bytes);
  TokenFileReader(const TokenFileReader&) = delete;
  TokenFileReader& operator=(const TokenFileReader&) = delete;
  ~TokenFileReader();

  const std::filesystem::path& path() const { return path_; }
  // Ids in the file.
  int64_t size() const { return count_; }
  int token_bytes() const { return width_; }
  // Where id 0 starts in the file (after a header): with token_bytes(), an id's byte offset for messages.
  int64_t data_offset() const { return offset_; }
  // What the file holds, for messages and dataset.json: "uint16 .npy", "raw uint32", "llm.c uint16 shard".
  const std::string& description() const { return description_; }

  // The next up to `max` ids, widened to int64 (an int32 .npy's negative ids stay negative for the caller
  // to refuse); empty at the end. Throws std::runtime_error naming the file when a read fails or the file
  // shrank since it was opened.
  const std::vector<int64_t>& next_chunk(size_t max = size_t{1} << 18);

 private:
  void open_npy(int64_t file_bytes);
  void open_raw(int64_t file_bytes, int raw_token_bytes);
  void open_llmc();

  std::filesystem::path path_;
  int fd_ = -1;
  int64_t count_ = 0;
  int64_t offset_ = 0;
  int width_ = 2;
  bool signed_ = false;  // int32 .npy
  std::string description_;
  int64_t next_ = 0;
  std::vector<char> bytes_;
  std::vector<int64_t> ids_;
};

}  // namespace gradsweep::data

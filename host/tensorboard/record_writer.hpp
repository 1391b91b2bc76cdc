#pragma once
// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length, uint32 masked CRC32C of the length, the data, uint32 masked CRC32C of the data
// (little-endian; the mask is TensorFlow's: rotate right by 15, add 0xa282ead8).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace gradsweep::tensorboard {

// CRC32C (Castagnoli) of `data`, masked as TFRecord stores it.
std::uint32_t masked_crc32c(std::string_view data);

// One framed record: what RecordWriter appends.
std::string frame_record(std::string_view data);

// Appends framed records to a file and flushes each one to the kernel, so that a process killed between
// records leaves a file whose every record is whole. Throws std::runtime_error naming the file when it
// cannot be created or a record cannot be written ("no space left writing FILE" on a full disk).
class RecordWriter {
 public:
  explicit RecordWriter(const std::filesystem::path& file);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void write(std::string_view data);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace gradsweep::tensorboard

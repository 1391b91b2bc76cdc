#include "tensorboard/record_writer.hpp"

#include <boost/crc.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gradsweep::tensorboard {

namespace {
// CRC32C: the Castagnoli polynomial, reflected, with TFRecord's initial value and final xor.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// `verb` is "create" or "write": "cannot write FILE: ...", or "no space left writing FILE: ..." on a full disk.
std::runtime_error write_error(const std::string& verb, const std::filesystem::path& file, int error) {
  const bool full = error == ENOSPC || error == EDQUOT;
  const std::string what = full ? "no space left " + verb.substr(0, verb.size() - 1) + "ing" : "cannot " + verb;
  return std::runtime_error(what + " " + file.string() +
                            (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
}
}  // namespace

std::uint32_t masked_crc32c(std::string_view data) {
  Crc32c crc;
  crc.process_bytes(data.data(), data.size());
  const std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string frame_record(std::string_view data) {
  std::string header;
  append_le(header, data.size(), 8);
  std::string out = header;
  append_le(out, masked_crc32c(header), 4);
  out.append(data);
  append_le(out, masked_crc32c(data), 4);
  return out;
}

RecordWriter::RecordWriter(const std::filesystem::path& file) : path_(file) {
  errno = 0;
  file_ = std::fopen(file.c_str(), "ab");
  if (file_ == nullptr) throw write_error("create", file, errno);
}

RecordWriter::~RecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordWriter::write(std::string_view data) {
  const std::string record = frame_record(data);
  errno = 0;
  // Flushed per record: a killed process loses at most the record it was writing, never an earlier one.
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw write_error("write", path_, errno);
}

}  // namespace gradsweep::tensorboard

#include "data/npy_header.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gradsweep::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

std::runtime_error npy_error(const std::filesystem::path& path, const std::string& what) {
  return std::runtime_error(path.string() + ": " + what);
}

// Exactly `n` bytes at `offset`, or an error saying the file ends first.
std::string read_at(const std::filesystem::path& path, int fd, int64_t offset, size_t n, int64_t file_bytes) {
  if (offset + static_cast<int64_t>(n) > file_bytes) {
    throw npy_error(path, "the .npy header needs " + std::to_string(offset + static_cast<int64_t>(n)) +
                              " bytes but the file has " + std::to_string(file_bytes) + ": truncated .npy file");
  }
  std::string bytes(n, '\0');
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, bytes.data() + done, n - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw npy_error(path, std::string("read failed: ") + (got < 0 ? std::strerror(errno) : "end of file"));
    done += static_cast<size_t>(got);
  }
  return bytes;
}

// The text after 'key': in the header dict, up to (not including) the first of `ends`.
std::string dict_value(const std::filesystem::path& path, const std::string& header, const std::string& key,
                       const char* ends) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) at = header.find("\"" + key + "\"");
  const size_t colon = at == std::string::npos ? at : header.find(':', at);
  if (colon == std::string::npos) throw npy_error(path, "the .npy header has no '" + key + "': " + header);
  const size_t start = header.find_first_not_of(' ', colon + 1);
  const size_t end = header.find_first_of(ends, start + 1);
  if (start == std::string::npos || end == std::string::npos)
    throw npy_error(path, "the .npy header's '" + key + "' is malformed: " + header);
  return header.substr(start, end - start + (header[end] == ')' ? 1 : 0));
}

// The dims of a shape tuple "(3, 4)", "(12,)", "()".
std::vector<int64_t> shape_dims(const std::filesystem::path& path, const std::string& shape) {
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    throw npy_error(path, "the .npy header's shape " + shape + " is not a tuple");
  std::vector<int64_t> dims;
  const std::string inner = shape.substr(1, shape.size() - 2);
  for (size_t start = 0; start < inner.size();) {
    size_t end = inner.find(',', start);
    if (end == std::string::npos) end = inner.size();
    const std::string item = inner.substr(start, end - start);
    if (item.find_first_not_of(" L") != std::string::npos) {
      try {
        dims.push_back(std::stoll(item));
      } catch (const std::exception&) {
        throw npy_error(path, "the .npy header's shape " + shape + " is malformed");
      }
    }
    start = end + 1;
  }
  return dims;
}

// The dtype: only little-endian (or byte-order-free) uint16, uint32, int32 are token ids we read.
void read_dtype(const std::filesystem::path& path, const std::string& descr, NpyLayout& layout) {
  const std::string d = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;  // without quotes
  if (d == "<u2" || d == "=u2") {
    layout = {2, false, 0, 0, "uint16"};
  } else if (d == "<u4" || d == "=u4") {
    layout = {4, false, 0, 0, "uint32"};
  } else if (d == "<i4" || d == "=i4") {
    layout = {4, true, 0, 0, "int32"};
  } else {
    const bool big = !d.empty() && d[0] == '>';
    throw npy_error(path, "holds a numpy array of dtype '" + d + "'" + (big ? " (big-endian)" : "") +
                              ": token ids must be little-endian uint16, uint32 or int32 "
                              "(convert with a.astype(np.uint32) or np.uint16)");
  }
}

}  // namespace

NpyLayout read_npy_header(const std::filesystem::path& path, int fd, int64_t file_bytes) {
  if (file_bytes < static_cast<int64_t>(kMagicBytes) ||
      read_at(path, fd, 0, kMagicBytes, file_bytes) != std::string(kMagic, kMagicBytes))
    throw npy_error(path, "not a .npy file (it does not start with numpy's magic \\x93NUMPY)");
  const std::string version = read_at(path, fd, 6, 2, file_bytes);
  const int major = static_cast<unsigned char>(version[0]);
  if (major < 1 || major > 3) throw npy_error(path, "unsupported .npy format version " + std::to_string(major));
  const size_t length_bytes = major == 1 ? 2 : 4;
  const std::string length_field = read_at(path, fd, 8, length_bytes, file_bytes);
  uint32_t header_length = 0;
  for (size_t i = length_bytes; i-- > 0;)
    header_length = (header_length << 8) | static_cast<unsigned char>(length_field[i]);
  const int64_t header_start = 8 + static_cast<int64_t>(length_bytes);
  const std::string header = read_at(path, fd, header_start, header_length, file_bytes);

  NpyLayout layout;
  read_dtype(path, dict_value(path, header, "descr", ",}"), layout);
  if (dict_value(path, header, "fortran_order", ",}").rfind("False", 0) != 0)
    throw npy_error(path, "holds a Fortran-ordered array: token ids must be a 1-D C-ordered array");
  const std::string shape = dict_value(path, header, "shape", ")");
  const std::vector<int64_t> dims = shape_dims(path, shape);
  if (dims.size() != 1) {
    throw npy_error(path, "holds a " + std::to_string(dims.size()) + "-D array of shape " + shape +
                              ": token ids must be a 1-D array (flatten it with a.reshape(-1))");
  }
  layout.count = dims[0];
  layout.data_offset = header_start + header_length;
  // A count beyond the file's size is cut short before the multiplication could overflow.
  const int64_t expected = layout.data_offset + std::min(layout.count, file_bytes) * layout.token_bytes;
  if (layout.count < 0 || layout.count > file_bytes || file_bytes != expected) {
    throw npy_error(path, "file is " + std::to_string(file_bytes) + " bytes but its header promises " +
                              std::to_string(layout.count) + " " + layout.dtype + " ids (" + std::to_string(expected) +
                              " bytes): " + (file_bytes < expected ? "truncated" : "trailing data") +
                              " or corrupt .npy file");
  }
  return layout;
}

}  // namespace gradsweep::data

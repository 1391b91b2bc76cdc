// numpy's .npy header (numpy.lib.format, versions 1.0 to 3.0), as far as a file of token ids needs it:
//   "\x93NUMPY", major, minor, header length (uint16 in 1.x, uint32 in 2.x/3.x), then a Python dict literal
//   {'descr': '<u2', 'fortran_order': False, 'shape': (N,), } padded with spaces to a 64-byte boundary.
// Written here (a few dozen lines) rather than taken from a library: the only arrays accepted are 1-D
// little-endian uint16, uint32 and int32, and everything else is refused with what the file holds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gradsweep::data {

struct NpyLayout {
  int token_bytes = 2;
  bool is_signed = false;  // int32
  int64_t count = 0;       // the array's length
  int64_t data_offset = 0;
  std::string dtype;  // "uint16", "uint32", "int32"
};

// Reads and checks the header of `path` (`file_bytes` long) from the open descriptor `fd`. Throws
// std::runtime_error naming the file when it is not a .npy file (magic), its header is cut short or
// malformed, it holds another dtype, a big-endian or Fortran-ordered array, not exactly one dimension, or
// its size does not match the shape (truncated, or trailing data).
NpyLayout read_npy_header(const std::filesystem::path& path, int fd, int64_t file_bytes);

}  // namespace gradsweep::data

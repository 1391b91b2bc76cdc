#pragma once
// Tensors as a .safetensors file (Hugging Face's format, which transformers' from_pretrained reads): an
// 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte range, then
// the tensors' bytes back to back. Written and read by the host because the format's own library is Rust
// and Python only; tests check both directions against the `safetensors` package.
#include <gradsweep/sdk/model.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace gradsweep::weights {

// Writes `tensors` (any device; float32, bfloat16, float16, float64, int64, int32, int16, int8, uint8 or
// bool) to `file`. Throws naming the file or the tensor on failure. Returns the bytes written.
std::uint64_t write_safetensors(const std::filesystem::path& file, const std::vector<sdk::NamedTensor>& tensors);

// A .safetensors file mapped read-only: its tensors are CPU tensors over the mapping, valid while this
// object lives, by name. The header is checked whole before any tensor is made: a truncated
// file, a range past the end or one that does not hold its shape is refused naming the file and tensor,
// and nothing is read outside the file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& file);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::vector<sdk::NamedTensor>& tensors() const { return tensors_; }

 private:
  void* mapping_ = nullptr;
  std::size_t size_ = 0;
  std::vector<sdk::NamedTensor> tensors_;
};

}  // namespace gradsweep::weights

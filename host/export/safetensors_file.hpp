#pragma once
// Tensors as a .safetensors file (Hugging Face's format, which transformers' from_pretrained reads): an
// 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte range, then
// the tensors' bytes back to back. Written by the host because the format's own library is Rust and
// Python only; tests read the files back with the `safetensors` package.
#include <gradsweep/sdk/model.hpp>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace gradsweep::host {

// Writes `tensors` (any device; float32, bfloat16, float16, int64 or int32) to `file`. Throws naming the
// file or the tensor on failure. Returns the bytes written.
std::uint64_t write_safetensors(const std::filesystem::path& file, const std::vector<sdk::NamedTensor>& tensors);

}  // namespace gradsweep::host

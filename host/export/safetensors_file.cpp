#include "export/safetensors_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

namespace gradsweep::host {
namespace {

const char* safetensors_dtype(const sdk::NamedTensor& t) {
  switch (t.tensor.scalar_type()) {
    case torch::kFloat: return "F32";
    case torch::kBFloat16: return "BF16";
    case torch::kHalf: return "F16";
    case torch::kLong: return "I64";
    case torch::kInt: return "I32";
    default: throw std::runtime_error("safetensors: tensor '" + t.name + "' has a dtype the format is not written for");
  }
}

}  // namespace

std::uint64_t write_safetensors(const std::filesystem::path& file, const std::vector<sdk::NamedTensor>& tensors) {
  std::vector<torch::Tensor> data;
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (header.contains(t.name)) throw std::runtime_error("safetensors: tensor '" + t.name + "' given twice");
    data.push_back(t.tensor.detach().to(torch::kCPU).contiguous());
    const std::uint64_t bytes = data.back().nbytes();
    header[t.name] = {{"dtype", safetensors_dtype(t)},
                      {"shape", data.back().sizes().vec()},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  // The data starts 8-aligned: the header is padded with spaces, as the reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + file.string());
  const std::uint64_t length = text.size();
  char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<char>((length >> (8 * i)) & 0xff);  // little-endian on any host
  out.write(le, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& d : data)
    out.write(static_cast<const char*>(d.data_ptr()), static_cast<std::streamsize>(d.nbytes()));
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + file.string() + " (disk full?)");
  return 8 + length + offset;
}

}  // namespace gradsweep::host

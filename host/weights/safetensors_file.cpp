#include "weights/safetensors_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradsweep::weights {
namespace {

// The format's dtype names, both directions.
constexpr std::array<std::pair<const char*, c10::ScalarType>, 10> kDtypes{{{"F32", torch::kFloat},
                                                                           {"BF16", torch::kBFloat16},
                                                                           {"F16", torch::kHalf},
                                                                           {"F64", torch::kDouble},
                                                                           {"I64", torch::kLong},
                                                                           {"I32", torch::kInt},
                                                                           {"I16", torch::kShort},
                                                                           {"I8", torch::kChar},
                                                                           {"U8", torch::kByte},
                                                                           {"BOOL", torch::kBool}}};

const char* safetensors_dtype(const sdk::NamedTensor& t) {
  for (const auto& [name, type] : kDtypes)
    if (type == t.tensor.scalar_type()) return name;
  throw std::runtime_error("safetensors: tensor '" + t.name + "' has a dtype the format is not written for");
}

std::optional<c10::ScalarType> dtype_named(const std::string& name) {
  for (const auto& [n, type] : kDtypes)
    if (name == n) return type;
  return std::nullopt;
}

std::uint64_t little_endian_u64(const unsigned char* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// One header entry as a tensor over `data` (the bytes after the header, `data_size` of them).
torch::Tensor tensor_of(const std::string& file, const std::string& name, const nlohmann::json& entry,
                        const unsigned char* data, std::uint64_t data_size) {
  const auto fail = [&](const std::string& why) { return std::runtime_error(file + ": tensor '" + name + "' " + why); };
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    throw fail("lacks dtype, shape or data_offsets");
  const std::optional<c10::ScalarType> type =
      entry["dtype"].is_string() ? dtype_named(entry["dtype"].get<std::string>()) : std::nullopt;
  if (!type) throw fail("has dtype " + entry["dtype"].dump() + ", which gradsweep does not read");
  std::vector<std::int64_t> shape;
  std::uint64_t elements = 1;
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_unsigned()) throw fail("has shape " + entry["shape"].dump());
    shape.push_back(d.get<std::int64_t>());
    elements *= d.get<std::uint64_t>();
  }
  const auto& range = entry["data_offsets"];
  if (!range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() || !range[1].is_number_unsigned())
    throw fail("has data_offsets " + range.dump());
  const std::uint64_t begin = range[0], end = range[1];
  if (begin > end || end > data_size)
    throw fail("lies at bytes " + std::to_string(begin) + ".." + std::to_string(end) + " of a data section of " +
               std::to_string(data_size) + " (truncated file?)");
  if (end - begin != elements * c10::elementSize(*type))
    throw fail("holds " + std::to_string(end - begin) + " bytes, not the " +
               std::to_string(elements * c10::elementSize(*type)) + " its shape and dtype need");
  // The mapping is read-only and nothing writes through these tensors: they are copied into parameters.
  return torch::from_blob(const_cast<unsigned char*>(data + begin), shape, torch::TensorOptions().dtype(*type));
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

SafetensorsFile::SafetensorsFile(const std::filesystem::path& file) {
  const std::string name = file.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + name);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 8) {
    ::close(fd);
    throw std::runtime_error(name + " is not a safetensors file: shorter than its 8-byte header length");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw std::runtime_error("cannot map " + name);
  }
  try {
    const auto* bytes = static_cast<const unsigned char*>(mapping_);
    const std::uint64_t header_size = little_endian_u64(bytes);
    if (header_size > size_ - 8)
      throw std::runtime_error(name + ": a header of " + std::to_string(header_size) + " bytes in a file of " +
                               std::to_string(size_) + " (truncated, or not safetensors)");
    const auto header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_size, nullptr, false);
    if (!header.is_object()) throw std::runtime_error(name + ": the header is not a JSON object (not safetensors?)");
    const unsigned char* data = bytes + 8 + header_size;
    const std::uint64_t data_size = size_ - 8 - header_size;
    for (const auto& [key, entry] : header.items())
      if (key != "__metadata__") tensors_.push_back({key, tensor_of(name, key, entry, data, data_size)});
  } catch (...) {
    ::munmap(mapping_, size_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

}  // namespace gradsweep::weights

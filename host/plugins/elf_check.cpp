#include "plugins/elf_check.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace gradsweep::plugins {
namespace fs = std::filesystem;

namespace {

#if __SIZEOF_POINTER__ == 8
using Ehdr = Elf64_Ehdr;
using Phdr = Elf64_Phdr;
using Shdr = Elf64_Shdr;
constexpr unsigned char kClass = ELFCLASS64;
#else
using Ehdr = Elf32_Ehdr;
using Phdr = Elf32_Phdr;
using Shdr = Elf32_Shdr;
constexpr unsigned char kClass = ELFCLASS32;
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kData = ELFDATA2LSB;
#else
constexpr unsigned char kData = ELFDATA2MSB;
#endif

// The machine this process runs on, as its own executable's header says: no per-architecture table.
int host_machine() {
  static const int machine = [] {
    Ehdr self{};
    std::ifstream in("/proc/self/exe", std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(&self), sizeof self)) return -1;
    return static_cast<int>(self.e_machine);
  }();
  return machine;
}

// Whether [offset, offset + count * size) lies within a file of `file_size` bytes, without overflow.
bool within(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t file_size) {
  if (offset > file_size) return false;
  if (size != 0 && count > (file_size - offset) / size) return false;
  return true;
}

std::string ends_beyond(const std::string& what, std::uint64_t end, std::uint64_t file_size) {
  return "truncated: " + what + " ends at byte " + std::to_string(end) + " but the file has " +
         std::to_string(file_size) + " bytes";
}

std::string header_problem(const Ehdr& h) {
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF file (no ELF magic number)";
  if (h.e_ident[EI_CLASS] != kClass)
    return std::string("ELF class ") + (h.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "64-bit or unknown") +
           " does not match this " + std::to_string(8 * sizeof(void*)) + "-bit host";
  if (h.e_ident[EI_DATA] != kData) return "ELF byte order does not match this host";
  if (h.e_type != ET_DYN) return "ELF type " + std::to_string(h.e_type) + " is not a shared library";
  if (host_machine() >= 0 && h.e_machine != host_machine())
    return "ELF machine " + std::to_string(h.e_machine) + " is not this host's (" + std::to_string(host_machine()) +
           ")";
  if (h.e_phnum == 0 || h.e_phentsize != sizeof(Phdr)) return "ELF program header table is missing or malformed";
  if (h.e_shnum != 0 && h.e_shentsize != sizeof(Shdr)) return "ELF section header table is malformed";
  return "";
}

}  // namespace

std::string elf_problem(const fs::path& path) {
  std::error_code ec;
  const std::uint64_t file_size = fs::file_size(path, ec);
  if (ec) return "cannot read its size: " + ec.message();
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open it for reading";
  Ehdr h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);  // a short file leaves the rest zero
  if (file_size < sizeof h || !in) {
    if (file_size >= SELFMAG && std::memcmp(h.e_ident, ELFMAG, SELFMAG) == 0)
      return ends_beyond("the ELF header", sizeof h, file_size);
    return "not an ELF file (" + std::to_string(file_size) + " bytes, shorter than an ELF header)";
  }
  if (std::string why = header_problem(h); !why.empty()) return why;
  if (!within(h.e_phoff, h.e_phnum, sizeof(Phdr), file_size))
    return ends_beyond("the program header table", h.e_phoff + std::uint64_t{h.e_phnum} * sizeof(Phdr), file_size);
  if (h.e_shnum != 0 && !within(h.e_shoff, h.e_shnum, sizeof(Shdr), file_size))
    return ends_beyond("the section header table", h.e_shoff + std::uint64_t{h.e_shnum} * sizeof(Shdr), file_size);
  std::vector<Phdr> segments(h.e_phnum);
  in.seekg(static_cast<std::streamoff>(h.e_phoff));
  if (!in.read(reinterpret_cast<char*>(segments.data()), static_cast<std::streamsize>(segments.size() * sizeof(Phdr))))
    return "cannot read the program header table";
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Phdr& s = segments[i];
    if (s.p_type != PT_LOAD && s.p_type != PT_DYNAMIC) continue;
    if (!within(s.p_offset, 1, s.p_filesz, file_size))
      return ends_beyond("loadable segment " + std::to_string(i), std::uint64_t{s.p_offset} + s.p_filesz, file_size);
  }
  return "";
}

}  // namespace gradsweep::plugins

#pragma once
// A valid llm.c token shard of `count` tokens: too small for one (4, 16) batch when count < 65, which only
// training finds out (planning checks that the file exists, not its length). The cell that reads it fails.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

namespace gradsweep::test {

inline void write_short_shard(const std::filesystem::path& file, int count) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520, header[1] = 1, header[2] = count;
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  const std::vector<std::uint16_t> tokens(static_cast<std::size_t>(count), 65);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * tokens.size()));
}

}  // namespace gradsweep::test

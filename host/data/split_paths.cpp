#include "data/split_paths.hpp"

#include <glob.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> directory_shards(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] != '.' && entry.path().extension() == ".bin" && entry.is_regular_file())
      files.push_back(entry.path());
  }
  if (files.empty()) throw std::runtime_error(dir.string() + ": a directory with no *.bin shard in it");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<fs::path> glob_matches(const fs::path& pattern) {
  glob_t result{};
  // GLOB_ERR: an unreadable directory on the way is an error, not silently fewer shards.
  const int status = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &result);
  std::vector<fs::path> files;
  if (status == 0)
    for (size_t i = 0; i < result.gl_pathc; ++i)
      if (fs::is_regular_file(result.gl_pathv[i])) files.emplace_back(result.gl_pathv[i]);
  ::globfree(&result);
  if (status != 0 && status != GLOB_NOMATCH)
    throw std::runtime_error(pattern.string() + ": cannot expand the glob (a directory on its path is unreadable)");
  if (files.empty()) throw std::runtime_error(pattern.string() + ": the glob matches no file");
  std::sort(files.begin(), files.end());  // glob sorts by the locale; name order must not depend on it
  return files;
}

bool is_glob(const fs::path& entry) { return entry.string().find_first_of("*?[") != std::string::npos; }

std::vector<fs::path> resolve_split_paths(const std::vector<fs::path>& entries) {
  if (entries.empty()) throw std::runtime_error("no shard named: the split is an empty list");
  std::vector<fs::path> files;
  for (const fs::path& entry : entries) {
    std::vector<fs::path> found;
    if (is_glob(entry) && !fs::exists(entry)) {
      found = glob_matches(entry);
    } else if (fs::is_directory(entry)) {
      found = directory_shards(entry);
    } else if (fs::exists(entry)) {
      found = {entry};
    } else {
      throw std::runtime_error("no such file: " + entry.string());
    }
    files.insert(files.end(), found.begin(), found.end());
  }
  std::set<fs::path> seen;
  for (const fs::path& f : files)
    if (!seen.insert(fs::weakly_canonical(f)).second)
      throw std::runtime_error(f.string() + ": named twice in one split (it would be read twice)");
  return files;
}

}  // namespace gradsweep::data

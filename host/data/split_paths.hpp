// Which shard files a split (`data.train`, `data.val`) names, in the order they are read. Each entry is
//   - a file: that shard;
//   - a directory: its *.bin files (not hidden, not recursive), in name order;
//   - a glob (a name with *, ? or [): the files it matches, in name order.
// A list of entries is read in list order, so a 100 GB corpus can be many shards in a fixed order.
#pragma once

#include <filesystem>
#include <vector>

namespace gradsweep::data {

// True if `entry` is read as a glob.
bool is_glob(const std::filesystem::path& entry);
// The regular files `pattern` matches, in name order (not the locale's). Throws std::runtime_error naming
// the pattern when it matches none or a directory on its path cannot be read.
std::vector<std::filesystem::path> glob_matches(const std::filesystem::path& pattern);

// The shard files of `entries`. Throws std::runtime_error naming the entry when there is none, a plain file
// entry does not exist ("no such file: PATH"), a glob matches no file, a directory holds no *.bin, or one
// file is named twice (it would be read twice). Whether each file is a valid shard is TokenShard::open's to say.
std::vector<std::filesystem::path> resolve_split_paths(const std::vector<std::filesystem::path>& entries);

}  // namespace gradsweep::data

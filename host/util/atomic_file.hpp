// Writing a file so that readers see either the old content or the complete new content, never a torn
// one: a crash or a kill mid-write (a preempted Slurm job, Ctrl-C during `gradsweep prepare`) must not leave a
// half-written shard that a later run would train on.
#pragma once

#include <filesystem>
#include <string_view>

namespace gradsweep::util {

// Writes `bytes` to `path` + ".tmp.<pid>", fsyncs it, renames it over `path` and fsyncs the directory (so the
// rename itself survives a power loss). The temporary file is removed on any failure. Creates missing parent
// directories. Throws std::runtime_error naming the file and the system error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Replaces directory `target` by `staged` (a fully written sibling directory). The old one is moved aside
// first, so a crash leaves either the old or the new directory in place, never a mixture.
void replace_directory(const std::filesystem::path& staged, const std::filesystem::path& target);

}  // namespace gradsweep::util

#pragma once
// Whole-file writes that readers never see half done: write a temporary beside the target, flush it to
// disk, then rename over the target (rename is atomic within a file system).
#include <filesystem>
#include <string_view>

namespace gradsweep::host {

void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Replaces directory `target` by `staged` (a fully written sibling directory) as atomically as POSIX
// allows: the old one is moved aside first, so a crash leaves either the old or the new one in place.
void replace_directory(const std::filesystem::path& staged, const std::filesystem::path& target);

}  // namespace gradsweep::host

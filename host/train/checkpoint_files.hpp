#pragma once
// The files of one checkpoint, written so that a full disk gives a clear error instead of a crash, and
// read so that a missing or truncated file is named.
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gradsweep::train {

// A write that failed, with its errno: the caller turns it into one message naming the checkpoint.
struct WriteFailure : std::runtime_error {
  int error;
  WriteFailure(const std::filesystem::path& file, int e);
};

// Both fsync the file; both throw WriteFailure with the first error.
void write_archive(torch::serialize::OutputArchive& archive, const std::filesystem::path& file);
void write_text(const std::filesystem::path& file, const std::string& text);

// Throws "checkpoint file F is missing" or "cannot read checkpoint file F (truncated?): ...".
void read_archive(torch::serialize::InputArchive& archive, const std::filesystem::path& file);

// "the disk has 1.2 MB free of 3.0 MB", of the filesystem holding `dir`; "" when it cannot be told.
std::string free_space(const std::filesystem::path& dir);

}  // namespace gradsweep::train

#include "data/input_files.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>

#include "data/corpus.hpp"
#include "data/split_paths.hpp"

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

constexpr size_t kBinarySniffBytes = 8192;
constexpr InputKind kAllKinds[] = {InputKind::text, InputKind::jsonl, InputKind::npy, InputKind::raw, InputKind::llmc};

// The first `limit` bytes of a file (all of a shorter one): enough to tell text from binary.
std::string read_head(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open input file");
  std::string head(limit, '\0');
  in.read(head.data(), static_cast<std::streamsize>(limit));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// The kind a file is read as: the format given, or with "auto" its extension's.
InputKind kind_of(const fs::path& file, const std::string& format) {
  if (format != "auto") {
    for (const InputKind k : kAllKinds)
      if (input_kind_name(k) == format) return k;
    throw std::invalid_argument("prepare: unknown input format \"" + format +
                                "\" (expected auto, text, jsonl, npy, raw or llmc)");
  }
  const fs::path ext = file.extension();
  if (ext == ".jsonl") return InputKind::jsonl;
  if (ext == ".npy") return InputKind::npy;
  if (ext == ".bin") return InputKind::llmc;
  return InputKind::text;
}

// One file named by the user (or matched by a glob): taken whatever its name, but text must look like text.
void add_named_file(const fs::path& file, const std::string& format, std::vector<InputFile>& out) {
  const InputKind kind = kind_of(file, format);
  if (!holds_tokens(kind) && looks_binary(read_head(file, kBinarySniffBytes))) {
    throw std::runtime_error(file.string() + ": looks like a binary file, not text" +
                             (format == "auto" ? " (give --input-format npy, raw or llmc for token ids)" : ""));
  }
  out.push_back({file, kind});
}

// A directory walk: hidden entries, *.dat files and binary-looking text files are skipped; returns how many
// binary files were.
size_t add_directory(const fs::path& dir, const std::string& format, std::vector<InputFile>& out) {
  size_t skipped_binary = 0;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied);
  for (; it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& p = it->path();
    if (is_hidden(p)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || p.extension() == ".dat") continue;
    const InputKind kind = kind_of(p, format);
    if (!holds_tokens(kind) && looks_binary(read_head(p, kBinarySniffBytes))) {
      ++skipped_binary;
      continue;
    }
    out.push_back({p, kind});
  }
  return skipped_binary;
}

// Text and token ids in one prepare cannot share a tokenizer: refused, naming one file of each.
void refuse_mixture(const std::vector<InputFile>& files) {
  const auto tokens = std::find_if(files.begin(), files.end(), [](const InputFile& f) { return holds_tokens(f.kind); });
  const auto text = std::find_if(files.begin(), files.end(), [](const InputFile& f) { return !holds_tokens(f.kind); });
  if (tokens == files.end() || text == files.end()) return;
  throw std::runtime_error("prepare: the inputs mix text (" + text->path.string() + ", read as " +
                           input_kind_name(text->kind) + ") and token ids (" + tokens->path.string() + ", read as " +
                           input_kind_name(tokens->kind) +
                           "): one prepare takes one or the other (name the files, or give --input-format)");
}

}  // namespace

std::string input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::text: return "text";
    case InputKind::jsonl: return "jsonl";
    case InputKind::npy: return "npy";
    case InputKind::raw: return "raw";
    case InputKind::llmc: return "llmc";
  }
  return "?";
}

bool holds_tokens(InputKind kind) {
  return kind == InputKind::npy || kind == InputKind::raw || kind == InputKind::llmc;
}

std::vector<InputFile> find_input_files(const std::vector<fs::path>& entries, const std::string& format) {
  if (entries.empty()) throw std::invalid_argument("no input files or directories given");
  if (format != "auto") kind_of({}, format);  // an unknown format is refused before any file is looked at
  std::vector<InputFile> candidates;
  size_t skipped_binary = 0;
  for (const fs::path& entry : entries) {
    std::error_code ec;
    const fs::file_status status = fs::status(entry, ec);
    if (is_glob(entry) && !fs::exists(status)) {
      for (const fs::path& file : glob_matches(entry)) add_named_file(file, format, candidates);
    } else if (ec || !fs::exists(status)) {
      throw std::runtime_error(entry.string() + ": input does not exist");
    } else if (fs::is_directory(status)) {
      skipped_binary += add_directory(entry, format, candidates);
    } else {
      add_named_file(entry, format, candidates);
    }
  }
  if (skipped_binary > 0) spdlog::info("prepare: skipped {} binary file(s)", skipped_binary);

  std::sort(candidates.begin(), candidates.end(),
            [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
  std::vector<InputFile> files;
  std::set<fs::path> seen;  // canonical paths: a symlink and its target are one file
  for (const InputFile& f : candidates) {
    if (seen.insert(fs::weakly_canonical(f.path)).second) files.push_back(f);
  }
  if (files.empty()) {
    std::string names;
    for (const auto& entry : entries) names += (names.empty() ? "" : ", ") + entry.string();
    throw std::runtime_error("no " + std::string(format == "auto" || format == "text" ? "text" : format) +
                             " files found in " + names);
  }
  refuse_mixture(files);
  return files;
}

}  // namespace gradsweep::data

#include "data/corpus.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gradsweep::data {
namespace {

constexpr size_t kBinarySniffBytes = 8192;

std::string read_file(const std::filesystem::path& path, size_t limit = std::string::npos) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open input file");
  if (limit == std::string::npos) {
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }
  std::string head(limit, '\0');
  in.read(head.data(), static_cast<std::streamsize>(limit));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

bool is_hidden(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); });
}

std::string_view without_cr(std::string_view line) {
  return !line.empty() && line.back() == '\r' ? line.substr(0, line.size() - 1) : line;
}

// Joins lines [first, last) with "\n" after dropping leading and trailing blank lines; "" if all blank.
std::string join_trimmed(const std::vector<std::string_view>& lines, size_t first, size_t last) {
  while (first < last && is_blank(lines[first])) ++first;
  while (last > first && is_blank(lines[last - 1])) --last;
  std::string doc;
  for (size_t i = first; i < last; ++i) {
    if (i > first) doc.push_back('\n');
    doc.append(lines[i]);
  }
  return doc;
}

}  // namespace

bool looks_binary(std::string_view head) {
  size_t control = 0;
  for (const char ch : head) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return true;
    const bool text_control = (c >= '\b' && c <= '\r') || c == 0x1b;
    if ((c < 0x20 || c == 0x7f) && !text_control) ++control;
  }
  return !head.empty() && control * 10 > head.size() * 3;
}

std::vector<std::filesystem::path> find_text_files(const std::vector<std::filesystem::path>& inputs) {
  namespace fs = std::filesystem;
  if (inputs.empty()) throw std::invalid_argument("no input files or directories given");
  std::vector<fs::path> candidates;
  size_t skipped_binary = 0;
  for (const fs::path& input : inputs) {
    std::error_code ec;
    const fs::file_status status = fs::status(input, ec);
    if (ec || !fs::exists(status)) throw std::runtime_error(input.string() + ": input does not exist");
    if (fs::is_directory(status)) {
      auto it = fs::recursive_directory_iterator(input, fs::directory_options::skip_permission_denied);
      for (; it != fs::recursive_directory_iterator(); ++it) {
        const fs::path& p = it->path();
        if (is_hidden(p)) {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file() || p.extension() == ".dat") continue;
        if (looks_binary(read_file(p, kBinarySniffBytes))) {
          ++skipped_binary;
          continue;
        }
        candidates.push_back(p);
      }
    } else {
      if (looks_binary(read_file(input, kBinarySniffBytes))) {
        throw std::runtime_error(input.string() + ": looks like a binary file, not text");
      }
      candidates.push_back(input);
    }
  }
  if (skipped_binary > 0) spdlog::info("prepare: skipped {} binary file(s)", skipped_binary);

  std::sort(candidates.begin(), candidates.end());
  std::vector<fs::path> files;
  std::set<fs::path> seen;  // canonical paths: a symlink and its target are one file
  for (const fs::path& p : candidates) {
    if (seen.insert(fs::weakly_canonical(p)).second) files.push_back(p);
  }
  if (files.empty()) {
    std::string names;
    for (const auto& input : inputs) names += (names.empty() ? "" : ", ") + input.string();
    throw std::runtime_error("no text files found in " + names);
  }
  return files;
}

std::vector<std::string> split_documents(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  const bool fortune_file =
      std::any_of(lines.begin(), lines.end(), [](std::string_view l) { return without_cr(l) == "%"; });
  const auto is_separator = [&](std::string_view l) { return fortune_file ? without_cr(l) == "%" : is_blank(l); };

  std::vector<std::string> documents;
  size_t first = 0;
  for (size_t i = 0; i <= lines.size(); ++i) {
    if (i == lines.size() || is_separator(lines[i])) {
      std::string doc = join_trimmed(lines, first, i);
      if (!doc.empty()) documents.push_back(std::move(doc));
      first = i + 1;
    }
  }
  return documents;
}

Corpus read_corpus(const std::vector<std::filesystem::path>& inputs) {
  Corpus corpus;
  corpus.sources = find_text_files(inputs);
  for (size_t s = 0; s < corpus.sources.size(); ++s) {
    const std::string text = read_file(corpus.sources[s]);
    std::vector<std::string> docs = split_documents(text);
    corpus.source_bytes.push_back(static_cast<int64_t>(text.size()));
    corpus.source_documents.push_back(static_cast<int64_t>(docs.size()));
    for (std::string& doc : docs) corpus.documents.push_back(Document{std::move(doc), s});
  }
  return corpus;
}

}  // namespace gradsweep::data

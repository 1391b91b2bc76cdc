#include "data/corpus.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>

namespace gradsweep::data {
namespace {

constexpr size_t kBinarySniffBytes = 8192;

// The first `limit` bytes of a file (all of a shorter one): enough to tell text from binary.
std::string read_head(const std::filesystem::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open input file");
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

// Cuts a stream of lines into documents: lines between separators, without leading or trailing blank
// lines, joined by "\n". Blank lines inside a document are held until the next non-blank line shows that
// they are inside it, so nothing but the current document is kept.
class DocumentSplitter {
 public:
  DocumentSplitter(bool fortune_file, const std::function<void(std::string&&)>& on_document)
      : fortune_file_(fortune_file), on_document_(on_document) {}

  void line(std::string_view l) {
    if (fortune_file_ ? without_cr(l) == "%" : is_blank(l)) {
      end_document();
    } else if (is_blank(l)) {
      if (started_) held_blank_.emplace_back(l);
    } else {
      for (const std::string& b : held_blank_) doc_.append("\n").append(b);
      held_blank_.clear();
      if (started_) doc_.push_back('\n');
      doc_.append(l);
      started_ = true;
    }
  }

  void end_document() {
    if (started_) on_document_(std::move(doc_));
    doc_.clear();
    held_blank_.clear();
    started_ = false;
  }

 private:
  const bool fortune_file_;
  const std::function<void(std::string&&)>& on_document_;
  std::string doc_;
  std::vector<std::string> held_blank_;
  bool started_ = false;
};

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
        if (looks_binary(read_head(p, kBinarySniffBytes))) {
          ++skipped_binary;
          continue;
        }
        candidates.push_back(p);
      }
    } else {
      if (looks_binary(read_head(input, kBinarySniffBytes))) {
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
  std::vector<std::string> documents;
  const std::function<void(std::string &&)> keep = [&](std::string&& doc) { documents.push_back(std::move(doc)); };
  DocumentSplitter splitter(fortune_file, keep);
  for (const std::string_view l : lines) splitter.line(l);
  splitter.end_document();
  return documents;
}

int64_t for_each_document(const std::filesystem::path& file, const std::function<void(std::string&&)>& on_document) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot open input file");
  std::string line;
  bool fortune_file = false;
  while (!fortune_file && std::getline(in, line)) fortune_file = without_cr(line) == "%";
  in.clear();
  in.seekg(0);
  DocumentSplitter splitter(fortune_file, on_document);
  int64_t bytes = 0;
  while (std::getline(in, line)) {
    bytes += static_cast<int64_t>(line.size()) + (in.eof() ? 0 : 1);
    splitter.line(line);
  }
  if (in.bad()) throw std::runtime_error(file.string() + ": read failed");
  splitter.end_document();
  return bytes;
}

}  // namespace gradsweep::data

#include "data/corpus.hpp"

#include "data/input_files.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace gradsweep::data {
namespace {

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
  std::vector<std::filesystem::path> files;
  for (const InputFile& f : find_input_files(inputs, "text")) files.push_back(f.path);
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

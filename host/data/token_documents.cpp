#include "data/token_documents.hpp"

#include <sys/stat.h>

#include <stdexcept>

#include "data/token_file.hpp"

namespace gradsweep::data {
namespace {

// The id at `index` of `file` is outside the vocabulary: named with its position, as a user finds it in
// Python (a[index]) and in a hex dump (the byte offset).
[[noreturn]] void refuse_id(const TokenFileReader& file, int64_t index, int64_t id, const TokenInputOptions& o) {
  const int64_t byte_offset = file.data_offset() + index * file.token_bytes();
  const std::string where = file.path().string() + ": id " + std::to_string(id) + " at token " + std::to_string(index) +
                            " (byte offset " + std::to_string(byte_offset) + ")";
  if (id < 0) throw std::runtime_error(where + " is negative: token ids are 0 or more");
  throw std::runtime_error(where + " is not below --vocab-size " + std::to_string(o.vocab_size) +
                           " (the tokenizer that made these ids has at least " + std::to_string(id + 1) + ")");
}

}  // namespace

int64_t count_token_inputs(const std::vector<InputFile>& files, const TokenInputOptions& options) {
  int64_t total = 0;
  for (const InputFile& f : files) total += TokenFileReader(f.path, f.kind, options.raw_token_bytes).size();
  return total;
}

std::vector<TokenSource> for_each_token_document(const std::vector<InputFile>& files, const TokenInputOptions& options,
                                                 const std::function<void(std::string_view document)>& on_document) {
  std::vector<TokenSource> sources;
  std::string document;  // the current run of ids, as native uint32, kept across files
  const auto end_document = [&] {
    if (document.empty()) return;
    on_document(document);
    document.clear();
    ++sources.back().documents;
  };
  for (const InputFile& f : files) {
    TokenFileReader reader(f.path, f.kind, options.raw_token_bytes);
    struct stat st {};
    sources.push_back({::stat(f.path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0, reader.size(), 0,
                       reader.description()});
    int64_t index = 0;
    for (const std::vector<int64_t>* chunk = &reader.next_chunk(); !chunk->empty(); chunk = &reader.next_chunk()) {
      for (const int64_t id : *chunk) {
        if (id < 0 || id >= options.vocab_size) refuse_id(reader, index, id, options);
        ++index;
        if (id == options.end_of_text) {
          end_document();
        } else {
          const auto narrow = static_cast<uint32_t>(id);
          document.append(reinterpret_cast<const char*>(&narrow), sizeof narrow);
        }
      }
    }
  }
  if (!sources.empty()) end_document();
  return sources;
}

}  // namespace gradsweep::data

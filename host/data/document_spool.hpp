// Documents shuffled with bounded memory, for `gradsweep prepare` on a corpus of any size.
//
// A corpus that fits one bucket (bucket_bytes of text) is shuffled as before: one Fisher-Yates pass with
// mt19937_64(seed) over all documents in reading order. A larger one is shuffled in two passes: each
// document is appended to one of K = ceil(bytes / bucket_bytes) bucket files on disk, drawn at random; then
// each bucket in turn is read back, shuffled in memory with Fisher-Yates, and visited. That order is still a
// uniformly random permutation, and memory is one bucket plus bounded write buffers, whatever the corpus.
// Without a seed (negative) buckets are filled in reading order and not shuffled: reading order is kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gradsweep::data {

class DocumentSpool {
 public:
  // `dir`: a directory of its own for the bucket files (created; removed with everything in it by the
  // destructor). `expected_bytes`: the corpus's size, which sets K. Throws std::invalid_argument if
  // bucket_bytes is not positive, std::runtime_error naming the directory if it cannot be created.
  DocumentSpool(std::filesystem::path dir, int64_t expected_bytes, int64_t bucket_bytes, int64_t seed);
  DocumentSpool(const DocumentSpool&) = delete;
  DocumentSpool& operator=(const DocumentSpool&) = delete;
  ~DocumentSpool();

  void add(std::string_view document);
  int64_t size() const { return documents_; }
  int64_t buckets() const { return static_cast<int64_t>(buffers_.size()); }

  // Every document in the shuffled order, with its position in it (0, 1, ...). The same order on every call:
  // the shuffle's generator is seeded afresh.
  void for_each(const std::function<void(int64_t position, const std::string& document)>& visit);

 private:
  std::filesystem::path bucket_file(size_t bucket) const;
  void flush(size_t bucket);
  void flush_all();

  std::filesystem::path dir_;
  int64_t bucket_bytes_;
  int64_t seed_;
  uint64_t assign_state_;  // the bucket draw: a generator of its own, so K = 1 keeps the one-pass order
  int64_t documents_ = 0;
  int64_t bytes_ = 0;
  int64_t buffered_ = 0;
  std::vector<std::string> buffers_;
};

}  // namespace gradsweep::data

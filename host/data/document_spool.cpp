#include "data/document_spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

// A bucket's writes are gathered up to this many bytes; all buckets together to kBufferedTotal, beyond which
// every bucket is flushed: with many buckets that bounds the buffers, not the bucket count times a buffer.
constexpr int64_t kBucketBuffer = int64_t{1} << 16;
constexpr int64_t kBufferedTotal = int64_t{8} << 20;

// splitmix64: the bucket draw needs no more than a well-mixed stream, and being separate from the shuffle's
// mt19937_64 it leaves the shuffle of a one-bucket corpus exactly as it always was.
uint64_t next_draw(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void append_to_file(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot write: " + std::strerror(errno));
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path.string() + ": write failed: " + std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
}

// A bucket file's documents: each a uint64 length, then its bytes.
std::vector<std::string> read_bucket(const fs::path& path) {
  std::vector<std::string> documents;
  std::ifstream in(path, std::ios::binary);
  if (!in) return documents;  // no document was drawn into it
  uint64_t length = 0;
  while (in.read(reinterpret_cast<char*>(&length), sizeof length)) {
    std::string doc(length, '\0');
    if (!in.read(doc.data(), static_cast<std::streamsize>(length)))
      throw std::runtime_error(path.string() + ": bucket file ends inside a document");
    documents.push_back(std::move(doc));
  }
  return documents;
}

}  // namespace

DocumentSpool::DocumentSpool(fs::path dir, int64_t expected_bytes, int64_t bucket_bytes, int64_t seed)
    : dir_(std::move(dir)), bucket_bytes_(bucket_bytes), seed_(seed), assign_state_(static_cast<uint64_t>(seed)) {
  if (bucket_bytes <= 0)
    throw std::invalid_argument("prepare: the shuffle bucket size must be positive, got " +
                                std::to_string(bucket_bytes));
  const int64_t k = std::max<int64_t>(1, (expected_bytes + bucket_bytes - 1) / bucket_bytes);
  buffers_.resize(static_cast<size_t>(k));
  std::error_code ec;
  fs::remove_all(dir_, ec);  // a killed earlier run's
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error(dir_.string() + ": cannot create the shuffle directory: " + ec.message());
}

DocumentSpool::~DocumentSpool() {
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

fs::path DocumentSpool::bucket_file(size_t bucket) const { return dir_ / ("bucket-" + std::to_string(bucket)); }

void DocumentSpool::add(std::string_view document) {
  const auto k = buffers_.size();
  // Without a seed, buckets take the documents in reading order, each about bucket_bytes of them.
  const size_t bucket = seed_ < 0 ? std::min(k - 1, static_cast<size_t>(bytes_ / bucket_bytes_))
                                  : (k == 1 ? 0 : static_cast<size_t>(next_draw(assign_state_) % k));
  const uint64_t length = document.size();
  std::string& buffer = buffers_[bucket];
  buffer.append(reinterpret_cast<const char*>(&length), sizeof length).append(document);
  buffered_ += static_cast<int64_t>(sizeof length + document.size());
  bytes_ += static_cast<int64_t>(document.size());
  ++documents_;
  if (static_cast<int64_t>(buffer.size()) >= kBucketBuffer) flush(bucket);
  if (buffered_ >= kBufferedTotal) flush_all();
}

void DocumentSpool::flush(size_t bucket) {
  std::string& buffer = buffers_[bucket];
  if (buffer.empty()) return;
  append_to_file(bucket_file(bucket), buffer);
  buffered_ -= static_cast<int64_t>(buffer.size());
  std::string().swap(buffer);  // give the memory back, not just the size
}

void DocumentSpool::flush_all() {
  for (size_t b = 0; b < buffers_.size(); ++b) flush(b);
}

void DocumentSpool::for_each(const std::function<void(int64_t, const std::string&)>& visit) {
  flush_all();
  // Fisher-Yates with mt19937_64, written out because std::shuffle's order differs between standard
  // libraries: the same seed must give the same data set everywhere.
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed_));
  int64_t position = 0;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    std::vector<std::string> documents = read_bucket(bucket_file(b));
    if (seed_ >= 0)
      for (size_t i = documents.size(); i > 1; --i) std::swap(documents[i - 1], documents[rng() % i]);
    for (const std::string& doc : documents) visit(position++, doc);
  }
}

}  // namespace gradsweep::data

// Pre-tokenized inputs (token_file.hpp) cut into documents, for `gradsweep prepare` to shuffle and split them
// as it does text. The files are one stream of ids in the order given (llm.c's data scripts cut documents
// across shard boundaries, so a document may continue in the next file); a document is a run of ids
// between two end-of-text ids, the end-of-text itself belonging to none (prepare puts one before each
// document again) and empty runs being none. Ids come from a tokenizer gradsweep does not have: the user
// gives its vocabulary size and end-of-text id, and every id is checked against that vocabulary.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "data/input_files.hpp"

namespace gradsweep::data {

struct TokenInputOptions {
  int64_t vocab_size = 0;  // ids must be in [0, vocab_size)
  int64_t end_of_text = -1;
  int raw_token_bytes = 0;  // raw files: 2 or 4
};

// What one input file held.
struct TokenSource {
  int64_t bytes = 0;
  int64_t tokens = 0;
  int64_t documents = 0;    // documents that end in this file
  std::string description;  // "uint16 .npy", ...
};

// Opens and checks every file (layout, size) without reading its ids; returns their total count of ids.
// Throws std::runtime_error naming the first file that is not valid (token_file.hpp).
int64_t count_token_inputs(const std::vector<InputFile>& files, const TokenInputOptions& options);

// Calls `on_document` with each document's ids, stored as consecutive native uint32 (read them back with
// for_each_document_id), in stream order; memory is one document and one read chunk. Returns one record
// per file. Throws std::runtime_error naming the file, the id's position and byte offset for an id that is
// negative or not below vocab_size.
std::vector<TokenSource> for_each_token_document(const std::vector<InputFile>& files, const TokenInputOptions& options,
                                                 const std::function<void(std::string_view document)>& on_document);

// The ids of a document for_each_token_document produced.
template <typename Visit>
void for_each_document_id(std::string_view document, Visit&& visit) {
  for (size_t at = 0; at + 4 <= document.size(); at += 4) {
    uint32_t id;
    std::memcpy(&id, document.data() + at, 4);
    visit(static_cast<int64_t>(id));
  }
}

}  // namespace gradsweep::data

// Which files a `gradsweep prepare --input` names, and what each one holds (see docs/data.md):
//   text   documents cut at blank lines or fortune "%" lines (corpus.hpp)
//   jsonl  one JSON object per line, one string field the document (jsonl_documents.hpp)
//   npy    a 1-D numpy array of token ids; raw: bare little-endian uint16/uint32 ids; llmc: an llm.c shard
//          (token_file.hpp): pre-tokenized inputs, documents are the runs between end-of-text ids
// An entry is a file, a directory (walked recursively) or a glob (a name with *, ? or [, as split_paths.hpp
// reads one). With format "auto" a file's extension decides: .jsonl, .npy, .bin (llm.c), anything else text.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::data {

enum class InputKind { text, jsonl, npy, raw, llmc };

// "text", "jsonl", "npy", "raw", "llmc".
std::string input_kind_name(InputKind kind);
// True for the kinds that hold token ids rather than text.
bool holds_tokens(InputKind kind);

struct InputFile {
  std::filesystem::path path;
  InputKind kind = InputKind::text;
};

// The input files of `entries`, sorted by path (so that the document order, and hence the split, does not
// depend on listing order), each file once even when reached twice (fortune's *.u8 symlinks). `format` is
// "auto" or a kind's name, which then applies to every file. Directory walks skip hidden entries and *.dat
// files (fortune's index tables), and text files that look binary. Throws std::invalid_argument for an
// unknown format, std::runtime_error naming the entry when it does not exist, a glob matches no file, an
// explicitly named text file looks binary, nothing is found, or text and token ids are mixed (one
// tokenizer cannot serve both).
std::vector<InputFile> find_input_files(const std::vector<std::filesystem::path>& entries, const std::string& format);

}  // namespace gradsweep::data

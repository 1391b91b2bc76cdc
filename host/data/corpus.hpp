// Raw text in, documents out: which files a `gradsweep prepare --input` names, and how each file is cut into
// documents (the unit of the train/val split and of end-of-text separation).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <functional>
#include <string_view>
#include <vector>

namespace gradsweep::data {

// The text files named by `inputs`: files as given, directories walked recursively. Directory walks skip
// hidden entries, *.dat files (fortune's binary index tables) and files that look binary; the same file reached
// twice (fortune's *.u8 symlinks point at the plain files) is read once. The result is sorted by path so that
// the document order, and hence the train/val split, does not depend on directory listing order.
// Throws std::runtime_error naming the input if it does not exist, an explicitly named file looks binary, or
// nothing readable is found. find_input_files() (input_files.hpp) with every file read as text; it also takes
// globs.
std::vector<std::filesystem::path> find_text_files(const std::vector<std::filesystem::path>& inputs);

// True if `head` (the start of a file) has a NUL byte or is more than 30% control characters (other than
// tab, newline, carriage return, form feed, vertical tab, backspace and escape, which real text files use:
// fortunes has overstrike backspaces and terminal escapes).
bool looks_binary(std::string_view head);

// Cuts one file's text into documents. A file with a line that is exactly "%" is a fortune file: documents are
// the quotations between "%" lines. Any other text is cut at blank (empty or whitespace-only) lines into
// paragraphs. Each document is its lines joined by "\n", without leading or trailing blank lines and
// without a final newline; empty documents are dropped.
std::vector<std::string> split_documents(std::string_view text);

// split_documents() of one file without holding the file: it is read twice, line by line (first for a "%"
// line, which makes it a fortune file, then to cut it), so memory is one document, whatever the file's size.
// Calls `on_document` for each document in file order; returns the file's size in bytes. Throws
// std::runtime_error naming the file if it cannot be read.
int64_t for_each_document(const std::filesystem::path& file, const std::function<void(std::string&&)>& on_document);

}  // namespace gradsweep::data

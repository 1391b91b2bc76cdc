// JSON Lines in, documents out: `gradsweep prepare --input-format jsonl --field F` (or a *.jsonl file) takes
// each line's string field F as one document, as exported by Hugging Face `datasets` (`to_json`) and most
// corpus tools. Read line by line, so memory is one line whatever the file's size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace gradsweep::data {

// Calls `on_document` with the field's value of each line, in file order (an empty value is no document,
// as an empty paragraph of text is none; a blank line is skipped). Returns the file's size in bytes. Throws
// std::runtime_error naming file:line (and the field) for a line that is not valid JSON, not an object,
// lacks the field, or holds a non-string in it, and naming the file when it cannot be read.
int64_t for_each_jsonl_document(const std::filesystem::path& file, const std::string& field,
                                const std::function<void(std::string&&)>& on_document);

}  // namespace gradsweep::data

#pragma once
// What the layering checks read of docs/architecture.md's tables: a row's cells and the backticked words of
// a cell, and a list written back into a message.
#include <string>
#include <vector>

namespace gradsweep::test {

// The lines of `markdown` under the heading line `heading` ("## Layers"), up to the next heading: the
// section's table rows are among them.
std::vector<std::string> section_lines(const std::string& markdown, const std::string& heading);

// The cells of a table row: "| a | b |" -> {" a ", " b "}.
std::vector<std::string> cells_of(const std::string& row);

// The backticked words of one cell: "`a`, `b`" -> {"a", "b"}.
std::vector<std::string> quoted_words(const std::string& cell);

// "a, b, c".
std::string listed(const std::vector<std::string>& names);

}  // namespace gradsweep::test

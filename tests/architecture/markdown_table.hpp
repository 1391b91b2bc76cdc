#pragma once
// What the layering checks read of docs/architecture.md's tables: a row's cells and the backticked words of
// a cell, and a list written back into a message.
#include <string>
#include <vector>

namespace gradsweep::test {

// The cells of a table row: "| a | b |" -> {" a ", " b "}.
std::vector<std::string> cells_of(const std::string& row);

// The backticked words of one cell: "`a`, `b`" -> {"a", "b"}.
std::vector<std::string> quoted_words(const std::string& cell);

// "a, b, c".
std::string listed(const std::vector<std::string>& names);

}  // namespace gradsweep::test

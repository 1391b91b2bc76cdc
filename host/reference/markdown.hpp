#pragma once
// The few pieces of GitHub-flavoured markdown the reference pages are made of: code spans, tables and
// fenced blocks, with what a cell or a span must not contain made safe.
#include <string>
#include <vector>

namespace gradsweep::reference {

// `text` as a code span; "" stays empty (an empty span does not render).
std::string code(const std::string& text);
// A table: the header row, its rule and one row per entry; `|` and line breaks inside a cell escaped.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
// A fenced block of `text` as written (a fence longer than any run of backticks inside it).
std::string fenced(const std::string& text, const std::string& language = "text");

}  // namespace gradsweep::reference

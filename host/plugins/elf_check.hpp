#pragma once
// Checks that a file is a whole ELF shared library for this machine before dlopen maps it.
//
// dlopen trusts the headers: a truncated library (a copy cut short, half a download) maps pages past the
// end of the file and the first touch of them kills the process with SIGBUS. Reading the headers and
// checking every table and loadable segment against the file size turns that into a refusal.
#include <filesystem>
#include <string>

namespace gradsweep::plugins {

// "" when the file can be handed to dlopen; otherwise why not ("truncated: the section header table ends
// at byte 61000 but the file has 30500 bytes").
std::string elf_problem(const std::filesystem::path& path);

}  // namespace gradsweep::plugins

#pragma once
// The generated reference, docs/reference/: its pages and their index, and writing them into a directory.
// Every page is a function of the code alone (no paths, dates or machine facts), so that the copy in the
// tree can be checked against a fresh one (tests/host/reference_docs_test.cpp).
#include "plugins/plugin_registry.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::reference {

struct ReferencePage {
  std::string file;   // "configuration.md"
  std::string holds;  // one line for the index
  std::string text;
};

// configuration.md, cli.md, environment.md and README.md, the index, which says how to regenerate them.
std::vector<ReferencePage> reference_pages(const CLI::App& app, const plugins::PluginRegistry& plugins);

// Writes each page into `dir` (created if missing); other files there are left alone.
void write_reference(const std::filesystem::path& dir, const std::vector<ReferencePage>& pages);

}  // namespace gradsweep::reference

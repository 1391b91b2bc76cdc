#include "reference/reference_pages.hpp"

#include "reference/cli_reference.hpp"
#include "reference/configuration_reference.hpp"
#include "reference/environment_reference.hpp"
#include "reference/markdown.hpp"

#include "util/atomic_file.hpp"

namespace gradsweep::reference {

std::vector<ReferencePage> reference_pages(const CLI::App& app, const plugins::PluginRegistry& plugins) {
  std::vector<ReferencePage> pages{
      {"configuration.md",
       "every key of a cell and of an experiment file's launcher, with its type, default, range, choices and help; "
       "every model's and strategy's options",
       configuration_reference(plugins)},
      {"cli.md", "every command's `--help`", cli_reference(app)},
      {"environment.md", "every environment variable gradsweep reads, with its value, what unset means and its use",
       environment_reference()}};
  std::vector<std::vector<std::string>> index;
  for (const ReferencePage& p : pages) index.push_back({"[" + p.file + "](" + p.file + ")", p.holds});
  pages.push_back(
      {"README.md", "this index",
       "# Reference\n\n"
       "These pages are generated from the code, and they are the only place where the docs write a default. Do "
       "not edit them: after changing a configuration key, a plugin's option, a command's options or an "
       "environment variable, build and regenerate them with\n\n" +
           fenced("build/gradsweep reference --out docs/reference", "sh") +
           "\nThe test `ReferenceDocs.MatchesTheCode` (`tests/host/reference_docs_test.cpp`) fails while they "
           "differ from what the code says, naming the first line that differs.\n\n" +
           table({"page", "holds"}, index)});
  return pages;
}

void write_reference(const std::filesystem::path& dir, const std::vector<ReferencePage>& pages) {
  for (const ReferencePage& p : pages) util::write_file_atomically(dir / p.file, p.text);
}

}  // namespace gradsweep::reference

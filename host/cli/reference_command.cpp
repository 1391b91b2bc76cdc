#include "cli/reference_command.hpp"

#include "env/environment.hpp"
#include "plugins/plugin_registry.hpp"
#include "reference/reference_pages.hpp"

#include <iostream>
#include <memory>
#include <stdexcept>

namespace gradsweep::cli {
namespace fs = std::filesystem;

namespace {

// The plugins that ship with this binary: its search path without $GRADSWEEP_PLUGIN_PATH's directories,
// which come before the built-in ones (PluginRegistry::search_path), so that the reference is the same
// whatever the user has installed.
std::vector<fs::path> shipped_plugin_directories() {
  std::vector<fs::path> dirs = plugins::PluginRegistry::search_path({});
  const auto from_environment = static_cast<std::ptrdiff_t>(env::path_list("GRADSWEEP_PLUGIN_PATH").size());
  dirs.erase(dirs.begin(), dirs.begin() + from_environment);
  return dirs;
}

void run_reference(const CLI::App& app, const fs::path& out) {
  plugins::PluginRegistry plugins;
  plugins.scan(shipped_plugin_directories());
  // A refused plugin would be missing from the page without a word: refuse to write an incomplete one.
  if (!plugins.refused().empty()) {
    std::string reasons;
    for (const auto& r : plugins.refused()) reasons += "\n  " + r.reason;
    throw std::runtime_error("plugins refused, the reference would lack them:" + reasons);
  }
  const auto pages = reference::reference_pages(app, plugins);
  reference::write_reference(out, pages);
  for (const auto& p : pages) std::cout << (out / p.file).string() << "\n";
}

}  // namespace

void register_reference_command(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "reference", "Write the generated reference (docs/reference/): every configuration key, command and variable");
  cmd->add_option("--out", *out, "Directory to write the pages into (docs/reference in the source tree)")->required();
  cmd->callback([&app, out] { run_reference(app, *out); });
}

}  // namespace gradsweep::cli

#include "cli/plugins_command.hpp"

#include "plugins/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <memory>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {

struct PluginsArgs {
  bool json = false;
  std::vector<std::string> paths;
  std::vector<std::string> files;
};

std::string abi_of(const sdk::PluginDescriptor& d) {
  return std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor);
}

}  // namespace

void register_plugins_command(CLI::App& app) {
  auto args = std::make_shared<PluginsArgs>();
  CLI::App* cmd = app.add_subcommand("plugins", "List plugins found on the search path, and files refused");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_option("--path", args->paths, "Also search this directory (first; repeatable)");
  cmd->add_option("--file", args->files, "Also load this plugin file (repeatable)");
  cmd->callback([args] {
    std::vector<fs::path> extra(args->paths.begin(), args->paths.end());
    const std::vector<fs::path> search = PluginRegistry::search_path(extra);
    PluginRegistry registry;
    for (const auto& f : args->files) registry.load_file(f);
    registry.scan(search);
    if (args->json) {
      nlohmann::json out{{"search_path", nlohmann::json::array()},
                         {"plugins", nlohmann::json::array()},
                         {"refused", nlohmann::json::array()}};
      for (const auto& d : search) out["search_path"].push_back(d.string());
      for (const auto& p : registry.plugins())
        out["plugins"].push_back({{"name", p.name},
                                  {"kind", sdk::to_string(p.kind)},
                                  {"version", p.version},
                                  {"abi", abi_of(*p.descriptor)},
                                  {"build", describe(p.descriptor->build)},
                                  {"summary", p.summary},
                                  {"path", p.path.string()}});
      for (const auto& r : registry.refused())
        out["refused"].push_back({{"path", r.path.string()}, {"reason", r.reason}});
      std::cout << out.dump(2) << std::endl;
      return;
    }
    std::cout << "search path:";
    for (const auto& d : search) std::cout << ' ' << d.string();
    std::cout << "\n\n" << std::left << std::setw(10) << "KIND" << std::setw(14) << "NAME" << std::setw(10)
              << "VERSION" << std::setw(6) << "ABI" << "PATH\n";
    for (const auto& p : registry.plugins())
      std::cout << std::setw(10) << sdk::to_string(p.kind) << std::setw(14) << p.name << std::setw(10) << p.version
                << std::setw(6) << abi_of(*p.descriptor) << p.path.string() << "\n    " << p.summary << "\n";
    if (!registry.refused().empty()) {
      std::cout << "\nrefused:\n";
      for (const auto& r : registry.refused()) std::cout << "  " << r.reason << "\n";
    }
  });
}

}  // namespace gradsweep::host

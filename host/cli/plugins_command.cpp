#include "cli/plugins_command.hpp"

#include "config/option_type_keyword.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/build_fingerprint.hpp>

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

namespace gradsweep::cli {
namespace fs = std::filesystem;

namespace {

struct PluginsArgs {
  bool json = false;
  std::string name;  // empty: list them all
  std::vector<std::string> paths;
  std::vector<std::string> files;
};

std::string abi_of(const sdk::PluginDescriptor& d) {
  return std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor);
}

// "ring|native|hierarchical" -> its values.
std::vector<std::string> choice_list(const std::string& choices) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t bar; (bar = choices.find('|', start)) != std::string::npos; start = bar + 1)
    out.push_back(choices.substr(start, bar - start));
  out.push_back(choices.substr(start));
  return out;
}

// A plugin's declared options, as the descriptor lists them (the order is the author's).
nlohmann::json options_json(const plugins::PluginRecord& p) {
  const sdk::PluginDescriptor& d = *p.descriptor;
  const config::OptionChoices choices = plugins::option_choices(p);
  nlohmann::json out = nlohmann::json::array();
  for (std::uint32_t i = 0; i < d.option_count; ++i) {
    const sdk::OptionSpec& o = d.options[i];
    nlohmann::json option{{"key", o.key},
                          {"type", config::type_keyword(o.type)},
                          {"default", o.default_value ? nlohmann::json(o.default_value) : nlohmann::json(nullptr)},
                          {"help", o.help ? o.help : ""}};
    if (i < choices.size() && !choices[i].empty()) option["choices"] = choice_list(choices[i]);
    out.push_back(option);
  }
  return out;
}

// What a strategy declares about itself (SDK 1.4); null for models and for strategies declaring nothing.
nlohmann::json capabilities_json(const plugins::PluginRecord& p) {
  const std::optional<sdk::StrategyCapabilities> c = plugins::declared_capabilities(p);
  if (!c) return nullptr;
  return {{"min_ranks", c->min_ranks},
          {"max_ranks", c->max_ranks},
          {"synchronous_exact", c->synchronous_exact},
          {"ranks_agree", c->ranks_agree},
          {"restricts_vocabulary", c->restricts_vocabulary},
          {"reshards", c->reshards},
          {"unit_events", c->unit_events},
          {"deterministic", c->deterministic},
          {"requires", sdk::feature_names(c->required_features)}};
}

nlohmann::json plugin_json(const plugins::PluginRecord& p) {
  return {{"name", p.name},
          {"kind", sdk::to_string(p.kind)},
          {"version", p.version},
          {"abi", abi_of(*p.descriptor)},
          {"build", plugins::describe(p.descriptor->build)},
          {"summary", p.summary},
          {"path", p.path.string()},
          {"options", options_json(p)},
          {"capabilities", capabilities_json(p)}};
}

// Help text wrapped to the terminal's usual width, each line indented under its key.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t width = 100) {
  std::istringstream words(text);
  std::string word, out, line;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width - indent) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

// `gradsweep plugins NAME`: everything a user needs to configure that plugin.
void print_details(const plugins::PluginRecord& p) {
  const sdk::PluginDescriptor& d = *p.descriptor;
  std::cout << sdk::to_string(p.kind) << " " << p.name << " " << p.version << " (SDK ABI " << abi_of(d) << ")\n"
            << "  " << p.summary << "\n  file:  " << p.path.string() << "\n  build: " << plugins::describe(d.build)
            << "\n";
  if (const std::optional<sdk::StrategyCapabilities> c = plugins::declared_capabilities(p)) {
    std::cout << "  ranks: " << c->min_ranks << " to " << (c->max_ranks == 0 ? "any" : std::to_string(c->max_ranks))
              << (c->synchronous_exact ? "; reproduces single" : "") << (c->ranks_agree ? "; ranks agree" : "")
              << (c->restricts_vocabulary ? "; restricts the vocabulary" : "")
              << (c->reshards ? "; resumes at another world size" : "")
              << (c->unit_events ? "; acts on model units" : "") << (c->deterministic ? "" : "; not deterministic")
              << (c->required_features != 0 ? "; needs " + sdk::feature_names(c->required_features) : "") << "\n";
  }
  const char* section = p.kind == sdk::PluginKind::Model ? "model" : "strategy";
  if (d.option_count == 0) {
    std::cout << "\nno options\n";
    return;
  }
  const config::OptionChoices choices = plugins::option_choices(p);
  std::cout << "\noptions (" << section << ".<key> in a cell or experiment file):\n";
  for (std::uint32_t i = 0; i < d.option_count; ++i) {
    const sdk::OptionSpec& o = d.options[i];
    std::cout << "  " << o.key << "  " << config::type_keyword(o.type) << ", default "
              << (o.default_value ? o.default_value : "none (optional)");
    if (i < choices.size() && !choices[i].empty()) {
      std::string values;
      for (const std::string& v : choice_list(choices[i])) values += (values.empty() ? "" : ", ") + v;
      std::cout << ", one of " << values;
    }
    std::cout << "\n" << wrapped(o.help ? o.help : "", 6);
  }
}

void print_table(const std::vector<fs::path>& search, const plugins::PluginRegistry& registry) {
  std::cout << "host built against: " << plugins::describe(sdk::detail::this_build()) << "\nsearch path:";
  for (const auto& d : search) std::cout << ' ' << d.string();
  std::cout << "\n\n"
            << std::left << std::setw(10) << "KIND" << std::setw(14) << "NAME" << std::setw(10) << "VERSION"
            << std::setw(6) << "ABI"
            << "PATH\n";
  for (const auto& p : registry.plugins())
    std::cout << std::setw(10) << sdk::to_string(p.kind) << std::setw(14) << p.name << std::setw(10) << p.version
              << std::setw(6) << abi_of(*p.descriptor) << p.path.string() << "\n    " << p.summary << "\n";
  if (!registry.refused().empty()) {
    std::cout << "\nrefused:\n";
    for (const auto& r : registry.refused()) std::cout << "  " << r.reason << "\n";
  }
  std::cout << "\n`gradsweep plugins NAME` shows a plugin's options.\n";
}

void run_plugins(const PluginsArgs& args) {
  std::vector<fs::path> extra(args.paths.begin(), args.paths.end());
  const std::vector<fs::path> search = plugins::PluginRegistry::search_path(extra);
  plugins::PluginRegistry registry;
  for (const auto& f : args.files) registry.load_file(f);
  registry.scan(search);

  std::vector<const plugins::PluginRecord*> shown;
  for (const auto& p : registry.plugins())
    if (args.name.empty() || p.name == args.name) shown.push_back(&p);
  if (!args.name.empty() && shown.empty()) {
    std::string names;
    for (const auto& p : registry.plugins()) names += (names.empty() ? "" : ", ") + p.name;
    throw std::runtime_error("no plugin named '" + args.name + "' on the search path; found: " + names);
  }
  if (args.json) {
    nlohmann::json out{{"host_build", plugins::describe(sdk::detail::this_build())},
                       {"search_path", nlohmann::json::array()},
                       {"plugins", nlohmann::json::array()},
                       {"refused", nlohmann::json::array()}};
    for (const auto& d : search) out["search_path"].push_back(d.string());
    for (const plugins::PluginRecord* p : shown) out["plugins"].push_back(plugin_json(*p));
    for (const auto& r : registry.refused())
      out["refused"].push_back({{"path", r.path.string()}, {"reason", r.reason}});
    std::cout << out.dump(2) << std::endl;
  } else if (!args.name.empty()) {
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (i > 0) std::cout << "\n";
      print_details(*shown[i]);
    }
  } else {
    print_table(search, registry);
  }
}

}  // namespace

void register_plugins_command(CLI::App& app) {
  auto args = std::make_shared<PluginsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plugins", "List plugins found on the search path and files refused; with NAME, that plugin's options");
  cmd->add_option("name", args->name, "Show this plugin's options (type, default, help)");
  cmd->add_flag("--json", args->json, "Print JSON instead of text (every plugin's options included)");
  cmd->add_option("--path", args->paths, "Also search this directory (first; repeatable)");
  cmd->add_option("--file", args->files, "Also load this plugin file (repeatable)");
  cmd->callback([args] { run_plugins(*args); });
}

}  // namespace gradsweep::cli

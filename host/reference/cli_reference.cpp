#include "reference/cli_reference.hpp"

#include "reference/markdown.hpp"

namespace gradsweep::reference {
namespace {

std::vector<const CLI::App*> visible_commands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty() && !sub->get_group().empty(); });
}

// `command`'s help as `--help` prints it when called as `name`, without the blank lines it ends with. Asked
// of the formatter directly: App::help() would print the command being run (`reference`) instead.
std::string help_section(const CLI::App& command, const std::string& name) {
  std::string text = command.get_formatter()->make_help(&command, name, CLI::AppFormatMode::Normal);
  text.erase(text.find_last_not_of(" \n") + 1);
  return "\n## " + code(name) + "\n\n" + fenced(text);
}

// The help of `command`, called `name` ("gradsweep bench comm"), then its subcommands'.
std::string command_help(const CLI::App& command, const std::string& name) {
  std::string out = help_section(command, name);
  for (const CLI::App* sub : visible_commands(command)) out += command_help(*sub, name + " " + sub->get_name());
  return out;
}

}  // namespace

std::string cli_reference(const CLI::App& app) {
  const std::string intro =
      "# Command line\n\n"
      "Generated from the code by `gradsweep reference` ([README.md](README.md)): do not edit. Each command's "
      "`--help`, as it prints it.\n";
  return intro + command_help(app, app.get_name());
}

}  // namespace gradsweep::reference

#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {
// `gradsweep check strategy NAME [--set strategy.KEY=VALUE]... [--ranks 1,2,3] [--json] [--keep DIR]`:
// the conformance kit for strategy plugins (conformance/conformance_kit.hpp, docs/plugins.md); and
// `gradsweep check model NAME [--set model.KEY=VALUE]... [--path DIR] [--file F] [--json]`, a model plugin
// checked on the CPU against what it declares (conformance/model_check.hpp).
void register_check_command(CLI::App& app);
}  // namespace gradsweep::cli

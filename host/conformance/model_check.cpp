#include "conformance/model_check.hpp"

#include "conformance/model_bench.hpp"
#include "conformance/model_declared_properties.hpp"
#include "conformance/model_repeat_properties.hpp"
#include "config/cell_config.hpp"
#include "config/option_schema.hpp"
#include "plugins/plugin_declarations.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <stdexcept>

namespace gradsweep::conformance {
namespace {

const plugins::PluginRecord& find_model(const plugins::PluginRegistry& registry, const std::string& name) {
  if (const plugins::PluginRecord* found = registry.try_find(sdk::PluginKind::Model, name)) return *found;
  std::string known;
  for (const auto& p : registry.plugins())
    if (p.descriptor->kind == sdk::PluginKind::Model) known += (known.empty() ? "" : ", ") + p.name;
  throw std::runtime_error("no model plugin '" + name + "'; found: " + known);
}

struct CheckedOptions {
  sdk::Options options;
  std::vector<std::string> shown;  // model.KEY=VALUE, as the report prints them
  bool dropout_declared = false;
  std::string dropout_note{};
};

// The --set values validated against the plugin's declared options as `gradsweep train` validates a
// cell's model section, with the dropout option set when the model declares it and the user did not.
CheckedOptions checked_options(const plugins::PluginRecord& record, const ModelCheckRequest& request) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& o : request.options) {
    if (o.rfind("model.", 0) != 0 || o.find('=') == std::string::npos || o.rfind("model.name=", 0) == 0)
      throw std::invalid_argument("--set " + o +
                                  ": the check takes the model's own options only, model.KEY=VALUE (the model "
                                  "is named by its argument)");
    config::apply_override(root, o);
  }
  CheckedOptions checked{{}, request.options};
  const std::vector<sdk::OptionSpec> specs = plugins::option_specs(record);
  checked.dropout_declared =
      !request.dropout_key.empty() && std::any_of(specs.begin(), specs.end(), [&](const sdk::OptionSpec& s) {
        return s.key == request.dropout_key && s.type == sdk::OptionType::Float;
      });
  const YAML::Node& given = root;  // const: asking for an absent key must not add it
  if (checked.dropout_declared && !(given["model"] && given["model"][request.dropout_key])) {
    const std::string set = "model." + request.dropout_key + "=" + short_number(request.dropout);
    config::apply_override(root, set);
    checked.shown.push_back(set);
    checked.dropout_note = request.dropout_key + "=" + short_number(request.dropout) + " set by the check";
  }
  config::Diagnostics diag("--set");
  checked.options = config::resolve_options(given["model"], "model", specs, plugins::option_choices(record), {}, diag);
  diag.throw_if_any();
  return checked;
}

// A check that throws (the plugin failed a call, or broke a rule of the boundary) fails with the message.
Finding guarded(const char* property, const std::function<Finding(const ModelCheckContext&)>& check,
                const ModelCheckContext& ctx) {
  try {
    return check(ctx);
  } catch (const std::exception& e) {
    return {property, 0, Verdict::Fail, "", std::string("threw: ") + e.what()};
  }
}

void run_checks(const ModelCheckContext& ctx, ModelCheckReport& report) {
  const std::pair<const char*, Finding (*)(const ModelCheckContext&)> checks[] = {
      {"parameters", check_model_parameters},
      {"parameter count", check_model_parameter_count},
      {"units", check_model_units},
      {"flops per token", check_model_flops},
      {"initial loss", check_model_initial_loss},
      {"output subset", check_model_output_subset},
      {"deterministic", check_model_deterministic},
      {"dropout split", check_model_dropout_split},
      {"save/load", check_model_save_load},
  };
  for (const auto& [property, check] : checks) report.findings.push_back(guarded(property, check, ctx));
}

}  // namespace

bool ModelCheckReport::passed() const { return failures().empty(); }

std::vector<std::string> ModelCheckReport::failures() const {
  std::vector<std::string> names;
  for (const auto& f : findings)
    if (f.verdict == Verdict::Fail) names.push_back(f.property);
  return names;
}

ModelCheckReport check_model(const ModelCheckRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  plugins::PluginRegistry registry;
  for (const auto& file : request.files) registry.load_file(file);
  registry.scan(plugins::PluginRegistry::search_path(request.paths));
  const plugins::PluginRecord& record = find_model(registry, request.model);
  CheckedOptions checked = checked_options(record, request);

  const ModelBench bench(record, std::move(checked.options), request.seed);
  ModelCheckContext ctx{&bench};
  ctx.info = info_of(*bench.build());
  ctx.dropout_key = request.dropout_key;
  ctx.dropout_declared = checked.dropout_declared;
  ctx.dropout_note = checked.dropout_note;
  // Four sequences, so that the batch splits into two halves of two; short, so that every check is quick.
  const std::int64_t seq_len = ctx.info.block_size > 0 ? std::min<std::int64_t>(16, ctx.info.block_size) : 16;
  if (ctx.info.vocab_size < 1)
    throw std::runtime_error("model '" + record.name + "' declares vocab_size " + std::to_string(ctx.info.vocab_size));
  ctx.batch = random_batch(4, seq_len, ctx.info.vocab_size, /*step=*/3, request.seed);

  ModelCheckReport report{record.name, checked.shown, ctx.info.num_parameters, ctx.info.vocab_size};
  run_checks(ctx, report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

void print_table(const ModelCheckReport& report, std::ostream& out) {
  out << "model '" << report.model << "'";
  for (const auto& o : report.options) out << " --set " << o;
  out << ": " << report.parameters << " parameters, vocabulary " << report.vocab_size << ", on the CPU\n";
  std::size_t width = 8;
  for (const auto& f : report.findings) width = std::max(width, f.property.size());
  out << std::left << std::setw(static_cast<int>(width) + 2) << "check" << std::setw(6) << ""
      << "figure / reason\n";
  for (const auto& f : report.findings) {
    std::string detail = f.figure;
    if (!f.reason.empty()) detail += (detail.empty() ? "" : "; ") + f.reason;
    out << std::setw(static_cast<int>(width) + 2) << f.property << std::setw(6) << to_string(f.verdict) << detail
        << "\n";
  }
  const std::vector<std::string> failed = report.failures();
  if (failed.empty()) {
    out << "PASSED: " << report.findings.size() << " checks in " << short_number(report.seconds) << " s\n";
    return;
  }
  out << "FAILED: " << failed.size() << " of " << report.findings.size() << " checks:";
  for (std::size_t i = 0; i < failed.size(); ++i) out << (i == 0 ? " " : ", ") << failed[i];
  out << "\n";
}

nlohmann::json to_json(const ModelCheckReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings)
    findings.push_back(
        {{"check", f.property}, {"verdict", to_string(f.verdict)}, {"figure", f.figure}, {"reason", f.reason}});
  return {{"model", report.model},           {"options", report.options}, {"parameters", report.parameters},
          {"vocabulary", report.vocab_size}, {"passed", report.passed()}, {"failed", report.failures()},
          {"seconds", report.seconds},       {"findings", findings}};
}

}  // namespace gradsweep::conformance

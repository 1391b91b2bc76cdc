#include "experiment/plan/report_options_reader.hpp"

#include "config/cell_config.hpp"
#include "config/yaml_guard.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace gradsweep::experiment {

runs::ReportOptions parse_report_options(const YAML::Node& root, config::Diagnostics& diag) {
  runs::ReportOptions options;
  const YAML::Node report = root["report"];
  if (!report || report.IsNull()) return options;
  if (!report.IsMap()) {
    diag.error(report, "report", "expected a mapping: {baseline: NAME, target_loss: X}");
    return options;
  }
  for (const auto& item : report) {
    const std::string key = item.first.as<std::string>();
    if (key == "baseline") {
      if (!item.second.IsScalar() || item.second.Scalar().empty())
        diag.error(item.second, "report.baseline", "expected a cell group, e.g. 'single' or 'strategy=ring nodes=2'");
      else
        options.baseline = item.second.Scalar();
    } else if (key == "target_loss") {
      double value = NAN;
      try {
        value = item.second.as<double>();
      } catch (const YAML::Exception&) {
      }
      if (!std::isfinite(value) || value <= 0)
        diag.error(item.second, "report.target_loss", "expected a positive number (nats)");
      else
        options.target_loss = value;
    } else {
      diag.error(item.first, "report." + key, "unknown key; report: {baseline: NAME, target_loss: X}");
    }
  }
  return options;
}

runs::ReportOptions read_report_options(const std::filesystem::path& out_dir) {
  const auto file = out_dir / "experiment.yaml";
  std::ifstream in(file);
  if (!in) return {};
  std::vector<std::string> overrides;
  std::stringstream text;
  for (std::string line; std::getline(in, line);) {
    text << line << "\n";
    // `gradsweep run` appends its --set overrides as comments "# --set key=value".
    if (line.rfind("# --set ", 0) == 0) overrides.push_back(line.substr(8));
  }
  YAML::Node root;
  try {
    root = config::parse_config_yaml(text.str(), file.string());
    for (const auto& o : overrides) config::apply_override(root, o);
  } catch (const std::exception&) {
    return {};  // the plan was made from this file: it parsed then; nothing to steer the report with
  }
  config::Diagnostics diag(file.string());
  const runs::ReportOptions options = parse_report_options(root, diag);
  diag.throw_if_any();
  return options;
}

}  // namespace gradsweep::experiment

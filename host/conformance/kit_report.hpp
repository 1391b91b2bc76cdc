#pragma once
// What `gradsweep check strategy` found: one finding per property and rank count, each PASS, FAIL or
// SKIP with its figure (the measured number) and, unless it passed, the reason; as a table or as JSON.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace gradsweep::conformance {

enum class Verdict { Pass, Fail, Skip };
const char* to_string(Verdict verdict);

struct Finding {
  std::string property;  // the names in docs/plugins.md: "exact", "loss falls", "ranks agree", "resume", ...
  int ranks = 0;         // the job's ranks; 0 for a property not run per rank count
  Verdict verdict = Verdict::Skip;
  std::string figure{};  // "max rel |dloss| 3.1e-07", "ended in 2.4 s"
  std::string reason{};  // why it failed or was skipped
};

// A finding of a property not run per rank count (the model check's): passed with its figure, or failed.
inline Finding model_pass(const char* property, std::string figure) {
  return {property, 0, Verdict::Pass, std::move(figure)};
}
inline Finding model_fail(const char* property, std::string figure, std::string reason) {
  return {property, 0, Verdict::Fail, std::move(figure), std::move(reason)};
}

struct KitReport {
  std::string strategy;
  std::vector<std::string> options;  // the --set strategy.KEY=VALUE it was checked with
  std::string reference;
  int steps = 0;
  std::vector<Finding> findings{};
  double seconds = 0;
  std::string workspace{};  // kept on request (--keep), else removed; "" then

  bool passed() const;  // no finding failed
};

void print_table(const KitReport& report, std::ostream& out);
nlohmann::json to_json(const KitReport& report);

// "3.1e-07", "0", "12.5": a figure's number, short.
std::string short_number(double value);

}  // namespace gradsweep::conformance

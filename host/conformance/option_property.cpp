#include "conformance/option_property.hpp"

#include "conformance/kit_job.hpp"

#include <filesystem>
#include <memory>

namespace gradsweep::conformance {
namespace {

struct BadValue {
  std::string key, value, what;
};

// Two rounds, since one key takes one value per job: a value of the wrong type for every key, then a value
// outside the choices for every key that has choices. `gradsweep train` reports every bad key at once.
std::vector<std::vector<BadValue>> bad_values(const plugins::PluginRecord& strategy) {
  const auto specs = plugins::option_specs(strategy);
  const auto choices = plugins::option_choices(strategy);
  std::vector<BadValue> wrong_type, outside;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string key = specs[i].key;
    switch (specs[i].type) {
      case sdk::OptionType::Int: wrong_type.push_back({key, "not-a-number", "text for an int"}); break;
      case sdk::OptionType::Float: wrong_type.push_back({key, "not-a-number", "text for a float"}); break;
      case sdk::OptionType::Bool: wrong_type.push_back({key, "maybe", "'maybe' for a bool"}); break;
      case sdk::OptionType::String: wrong_type.push_back({key, "[1, 2]", "a list for a string"}); break;
    }
    if (i < choices.size() && !choices[i].empty())
      outside.push_back({key, "not-one-of-them", "a value outside " + choices[i]});
  }
  std::vector<std::vector<BadValue>> rounds;
  for (auto* round : {&wrong_type, &outside})
    if (!round->empty()) rounds.push_back(*round);
  return rounds;
}

// "" when refused as it should be; else what went wrong.
std::string judge(const JobRun& run, const BadValue& bad) {
  const std::string key = "strategy." + bad.key;
  const std::string what = key + "=" + bad.value + " (" + bad.what + ")";
  if (run.exit_code == 0) return what + " was accepted";
  if (std::filesystem::exists(run.dir / "metrics.jsonl")) return what + " was refused only after training started";
  if (run.output.find(": " + key + ": ") == std::string::npos)
    return what + " was refused without naming " + key + ": " + run.failure();
  return "";
}

}  // namespace

Finding check_bad_options(const KitContext& ctx) {
  Finding f{"bad options", 0};
  const auto rounds = bad_values(*ctx.strategy);
  if (rounds.empty()) {
    f.verdict = Verdict::Skip;
    f.reason = "declares no options";
    return f;
  }
  std::vector<std::unique_ptr<Job>> jobs;  // at once: each ends as soon as its configuration is read
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    JobSpec spec{"options-" + std::to_string(i + 1), 1, ctx.strategy_sets, {}, {}, 120};
    for (const auto& bad : rounds[i]) spec.overrides.push_back("strategy." + bad.key + "=" + bad.value);
    ctx.say("  " + spec.label + ": " + std::to_string(rounds[i].size()) + " bad values at once");
    jobs.push_back(std::make_unique<Job>(ctx.ws, spec));
  }
  std::size_t refused = 0, total = 0;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const JobRun run = jobs[i]->finish();
    for (const auto& bad : rounds[i]) {
      ++total;
      const std::string problem = judge(run, bad);
      if (problem.empty())
        ++refused;
      else if (f.reason.empty())
        f.reason = problem;
    }
  }
  f.figure = std::to_string(refused) + " of " + std::to_string(total) + " bad values refused";
  f.verdict = refused == total ? Verdict::Pass : Verdict::Fail;
  return f;
}

}  // namespace gradsweep::conformance

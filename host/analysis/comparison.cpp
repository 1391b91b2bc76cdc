#include "analysis/comparison.hpp"
#include "analysis/json_number.hpp"

#include "runs/cell_status.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace gradsweep::analysis {
namespace {

bool is_model_or_data(const std::string& axis) {
  for (const char* prefix : {"model", "data"}) {
    const std::string p = prefix;
    if (axis == p || axis.rfind(p + ".", 0) == 0) return true;
  }
  return false;
}

AxisValues model_and_data(const AxisValues& axes) {
  AxisValues out;
  for (const auto& kv : axes)
    if (is_model_or_data(kv.first)) out.push_back(kv);
  return out;
}

AxisValues group_axes(const runs::PlannedCell& cell) {
  AxisValues axes;
  for (const auto& kv : cell.axes)
    if (kv.first != "seed") axes.push_back(kv);
  return axes;
}

// A group's label names what differs between the groups that finished a cell, as the charts do; a group
// with none finished is named by what differs among all groups, so that it stays told apart (a failed cell
// on its own data would otherwise add its data path to every label).
void label_groups(Comparison& c) {
  std::vector<AxisValues> all, finished;
  std::vector<int> finished_index(c.groups.size(), -1);
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    all.push_back(c.groups[g].axes);
    const bool any_ok = std::any_of(c.groups[g].cells.begin(), c.groups[g].cells.end(),
                                    [&](int cell) { return c.cells[static_cast<std::size_t>(cell)].ok; });
    if (any_ok) {
      finished_index[g] = static_cast<int>(finished.size());
      finished.push_back(c.groups[g].axes);
    }
  }
  const auto by_all = distinct_labels(all, "all cells"), by_finished = distinct_labels(finished, "all cells");
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    c.groups[g].label = finished_index[g] >= 0 ? by_finished[static_cast<std::size_t>(finished_index[g])] : by_all[g];
}

void read_outcomes(const runs::SweepPlan& plan, Comparison& c) {
  c.cells.resize(plan.cells.size());
  std::map<AxisValues, int> index;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    const runs::PlannedCell& cell = plan.cells[i];
    CellOutcome& out = c.cells[i];
    const bool done = runs::is_cell_done(cell.dir, cell.config_hash);
    if (done) {
      std::ifstream in(cell.dir / "summary.json");
      out.summary = nlohmann::json::parse(in, nullptr, false);
      out.ok = out.summary.is_object();
    }
    // A cell that changed size mid-run is a group of its own, named so: pooled with the cells that kept their
    // size it would report a mean of two cluster sizes as one of them (elastic_cell.hpp).
    AxisValues axes = group_axes(cell);
    if (const std::string resized = done ? runs::resized_text(cell, runs::read_cell_status(cell.dir), out.summary) : "";
        !resized.empty())
      axes.emplace_back("resized", resized);
    auto [it, fresh] = index.emplace(axes, static_cast<int>(c.groups.size()));
    if (fresh) {
      c.groups.emplace_back();
      c.groups.back().axes = axes;
    }
    CellGroup& g = c.groups[it->second];
    out.group = it->second;
    out.round = static_cast<int>(g.cells.size());
    g.cells.push_back(static_cast<int>(i));
  }
  label_groups(c);
}

// Does every word of `spec` (a value, or "axis=value axis=value") name one of the group's axis values?
bool matches(const CellGroup& g, const std::string& spec) {
  if (spec == g.label) return true;
  std::istringstream words(spec);
  bool any = false;
  for (std::string word; words >> word;) {
    any = true;
    const auto eq = word.find('=');
    const std::string key = eq == std::string::npos ? "" : word.substr(0, eq);
    const std::string value = eq == std::string::npos ? word : word.substr(eq + 1);
    bool found = false;
    for (const auto& [axis, v] : g.axes) {
      const bool key_ok = key.empty() || key == axis || key == axis.substr(axis.rfind('.') + 1);
      found = found || (key_ok && (value == v || value == without_options(v)));
    }
    if (!found) return false;
  }
  return any;
}

std::string group_list(const Comparison& c) {
  std::string text;
  for (const auto& g : c.groups) text += (text.empty() ? "'" : ", '") + g.label + "'";
  return text;
}

int find_baseline(const Comparison& c, const std::string& spec, const std::string& source) {
  if (spec.empty()) return c.groups.empty() ? -1 : 0;
  std::vector<int> hits;
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    if (matches(c.groups[g], spec)) hits.push_back(static_cast<int>(g));
  if (hits.size() == 1) return hits.front();
  if (hits.empty())
    throw std::invalid_argument(source + " '" + spec + "' is not in the sweep: it matches none of its cell groups (" +
                                group_list(c) + ")");
  std::string which;
  for (const int h : hits) which += (which.empty() ? "'" : ", '") + c.groups[h].label + "'";
  throw std::invalid_argument(source + " '" + spec + "' matches " + std::to_string(hits.size()) + " cell groups (" +
                              which + "); name one, e.g. '" + c.groups[hits.front()].label + "'");
}

// The values of `key` over a group's rounds (NaN where the cell did not finish).
std::vector<double> by_round(const Comparison& c, const CellGroup& g, const char* key) {
  std::vector<double> v;
  for (const int i : g.cells) v.push_back(c.cells[i].ok ? json_number(c.cells[i].summary, key) : NAN);
  return v;
}

std::vector<double> target_by_round(const Comparison& c, const CellGroup& g, double TargetReached::*field) {
  std::vector<double> v;
  for (const int i : g.cells) v.push_back(c.cells[i].to_target ? (*c.cells[i].to_target).*field : NAN);
  return v;
}

void time_to_target_all(const runs::SweepPlan& plan, Comparison& c) {
  if (!std::isfinite(c.target_loss)) return;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    CellOutcome& out = c.cells[i];
    if (!out.ok) continue;
    const auto points =
        read_eval_points(plan.cells[i].dir / "metrics.jsonl", json_number(out.summary, "tokens_per_step"));
    out.to_target = time_to_target(points, c.target_loss);
  }
  for (auto& g : c.groups) {
    g.to_target_s = summarize(target_by_round(c, g, &TargetReached::seconds));
    g.to_target_tokens = summarize(target_by_round(c, g, &TargetReached::tokens));
    g.to_target_bytes = summarize(target_by_round(c, g, &TargetReached::bytes));
    g.reached = g.to_target_s.n;
  }
}

}  // namespace

Comparison compare_cells(const runs::SweepPlan& plan, const runs::ReportOptions& options,
                         const std::string& baseline_source, const std::string& target_source) {
  Comparison c;
  read_outcomes(plan, c);
  c.baseline = find_baseline(c, options.baseline, baseline_source);
  c.baseline_source = options.baseline.empty() ? "first group" : baseline_source;
  for (auto& g : c.groups) {
    g.tokens_per_sec = summarize(by_round(c, g, "tokens_per_sec"));
    g.step_time_s = summarize(by_round(c, g, "step_time_s"));
    g.val_loss = summarize(by_round(c, g, "val_loss"));
    g.finished = g.tokens_per_sec.n;
    c.max_repeats = std::max(c.max_repeats, static_cast<int>(g.cells.size()));
  }
  if (c.baseline < 0) return c;
  const CellGroup& base = c.groups[c.baseline];
  if (options.target_loss) {
    c.target_loss = *options.target_loss;
    c.target_source = target_source;
  } else if (base.val_loss.n > 0) {
    c.target_loss = base.val_loss.median;
    c.target_source = "baseline's final val loss (median)";
  }
  time_to_target_all(plan, c);
  const auto base_speed = by_round(c, base, "tokens_per_sec");
  const auto base_time = target_by_round(c, base, &TargetReached::seconds);
  for (std::size_t gi = 0; gi < c.groups.size(); ++gi) {
    CellGroup& g = c.groups[gi];
    const auto speed = by_round(c, g, "tokens_per_sec");
    g.same_model_data = model_and_data(g.axes) == model_and_data(base.axes);
    if (!g.same_model_data) continue;
    for (std::size_t r = 0; r < g.cells.size() && r < base_speed.size(); ++r)
      c.cells[g.cells[r]].speed_ratio = speed[r] / base_speed[r];
    if (static_cast<int>(gi) == c.baseline) continue;
    g.speed = paired_ratio(speed, base_speed);
    g.to_target = paired_ratio(target_by_round(c, g, &TargetReached::seconds), base_time);
  }
  return c;
}

}  // namespace gradsweep::analysis

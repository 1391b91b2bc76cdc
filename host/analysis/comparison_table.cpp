#include "analysis/comparison_table.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace gradsweep::analysis {
namespace {

std::string num(double v, const char* format = "%.6g") {
  if (!std::isfinite(v)) return "";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

std::string shown(double v) { return num(v, "%.4g"); }

// "1234 [1200, 1260]", or "1234" from one run (the table's note says so once).
std::string with_interval(const Summary& s) {
  if (s.n == 0) return "-";
  if (!s.has_interval) return shown(s.median);
  return shown(s.median) + " [" + shown(s.low) + ", " + shown(s.high) + "]";
}

std::string ratio_text(const RatioSummary& r) {
  if (r.rounds == 0) return "-";
  if (!r.has_interval) return shown(r.ratio);
  return shown(r.ratio) + " [" + shown(r.low) + ", " + shown(r.high) + "]";
}

void put(ResultsTable& table, std::map<std::string, std::string>& row, const std::string& column,
         const std::string& value) {
  if (std::find(table.columns.begin(), table.columns.end(), column) == table.columns.end())
    table.columns.push_back(column);
  row[column] = value;
}

void put_summary(ResultsTable& t, std::map<std::string, std::string>& row, const std::string& metric,
                 const Summary& s) {
  put(t, row, "group." + metric + ".median", s.n ? num(s.median) : "");
  put(t, row, "group." + metric + ".ci95_low", s.has_interval ? num(s.low) : "");
  put(t, row, "group." + metric + ".ci95_high", s.has_interval ? num(s.high) : "");
}

}  // namespace

std::string speed_verdict(const Comparison& c, int group) {
  if (group == c.baseline) return "baseline";
  const CellGroup& g = c.groups[group];
  if (g.finished == 0) return "no finished pair";
  if (!g.same_model_data) return "no baseline of the same model and data";
  if (g.speed.rounds == 0) return "no finished pair";
  return verdict_text(g.speed.verdict, true);
}

void add_comparison_columns(ResultsTable& table, const Comparison& c) {
  for (std::size_t i = 0; i < table.rows.size() && i < c.cells.size(); ++i) {
    auto& row = table.rows[i];
    const CellOutcome& cell = c.cells[i];
    const CellGroup& g = c.groups[cell.group];
    put(table, row, "group", g.label);
    put(table, row, "round", std::to_string(cell.round));
    put(table, row, "speed_vs_baseline", num(cell.speed_ratio));
    put(table, row, "target_loss", num(c.target_loss));
    const bool judged = cell.ok && std::isfinite(c.target_loss);
    put(table, row, "time_to_target_s", !judged ? "" : cell.to_target ? num(cell.to_target->seconds) : "not reached");
    put(table, row, "tokens_to_target", !judged ? "" : cell.to_target ? num(cell.to_target->tokens) : "not reached");
    put(table, row, "bytes_to_target", !judged ? "" : cell.to_target ? num(cell.to_target->bytes) : "not reached");
    put(table, row, "group.n", std::to_string(g.finished));
    put_summary(table, row, "tokens_per_sec", g.tokens_per_sec);
    put_summary(table, row, "step_time_s", g.step_time_s);
    put_summary(table, row, "val_loss", g.val_loss);
    put_summary(table, row, "time_to_target_s", g.to_target_s);
    const bool base = cell.group == c.baseline;
    put(table, row, "group.speed_vs_baseline", base ? "1" : g.speed.rounds ? num(g.speed.ratio) : "");
    put(table, row, "group.speed_vs_baseline.ci95_low", g.speed.has_interval ? num(g.speed.low) : "");
    put(table, row, "group.speed_vs_baseline.ci95_high", g.speed.has_interval ? num(g.speed.high) : "");
    put(table, row, "group.verdict", speed_verdict(c, cell.group));
  }
}

namespace {

bool lacks_interval(const Summary& s) { return s.n == 1 && !s.has_interval; }

// Said once under a table rather than in every cell of a one-run sweep.
std::string interval_note(bool all_single, bool some_single) {
  if (all_single)
    return "One run per group: no intervals. Run the sweep with `repeat: N` (N >= 3) to get 95% intervals.";
  if (some_single)
    return "A value without an interval in brackets comes from a single run: run the sweep with `repeat: N` "
           "(N >= 3) to get one.";
  return "";
}

ReportSection comparison_section(const Comparison& c) {
  const CellGroup& base = c.groups[c.baseline];
  ReportSection s;
  s.heading = "Comparison with the baseline";
  s.intro = "Baseline: **" + base.label + "** (" + c.baseline_source +
            "). Each value is the median over a group's runs (cells that differ only by seed or repetition) "
            "with a 95% Student-t interval of the mean in brackets; the ratio is tokens/s over the baseline's, "
            "paired round by round (runs interleaved in time), as the geometric mean with a t interval on the "
            "log ratios. Verdict: faster or slower when the whole interval is above or below 1, otherwise "
            "not resolved at this noise. Only groups of the baseline's model and data are compared with it.";
  s.columns = {"group", "runs", "tokens/s", "step time (s)", "val loss", "tokens/s vs baseline", "verdict"};
  bool all_single = true, some_single = false;
  for (std::size_t gi = 0; gi < c.groups.size(); ++gi) {
    const CellGroup& g = c.groups[gi];
    if (g.finished) {
      all_single = all_single && lacks_interval(g.tokens_per_sec);
      some_single = some_single || lacks_interval(g.tokens_per_sec);
    }
    const bool is_base = static_cast<int>(gi) == c.baseline;
    s.rows.push_back({g.label, std::to_string(g.finished), with_interval(g.tokens_per_sec),
                      with_interval(g.step_time_s), with_interval(g.val_loss),
                      is_base ? std::string("1") : ratio_text(g.speed), speed_verdict(c, static_cast<int>(gi))});
  }
  s.note = interval_note(all_single, some_single);
  return s;
}

std::string target_note(const Comparison& c, const CellGroup& g, int gi) {
  if (gi == c.baseline) return "baseline";
  if (!g.same_model_data) return "no baseline of the same model and data";
  const bool faster = g.tokens_per_sec.n && g.tokens_per_sec.median > c.groups[c.baseline].tokens_per_sec.median;
  if (faster && g.reached == 0) return "**more tokens/s than the baseline, but misses the target**";
  if (faster && g.to_target.rounds && g.to_target.ratio > 1)
    return "**more tokens/s than the baseline, but reaches the target later**";
  if (g.reached > 0 && g.reached < g.finished)
    return "reached in " + std::to_string(g.reached) + " of " + std::to_string(g.finished) + " runs";
  return "";
}

// Groups that finished, ranked: those of the baseline's model and data that reached the target by their
// median time, then the others of that model and data, then those of other models or data (unranked).
std::vector<int> target_order(const Comparison& c) {
  std::vector<int> order;
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    if (c.groups[g].finished) order.push_back(static_cast<int>(g));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& x = c.groups[a];
    const auto& y = c.groups[b];
    if (x.same_model_data != y.same_model_data) return x.same_model_data;
    if ((x.reached > 0) != (y.reached > 0)) return x.reached > 0;
    return x.reached > 0 && x.to_target_s.median < y.to_target_s.median;
  });
  return order;
}

ReportSection target_section(const Comparison& c) {
  ReportSection s;
  s.heading = "Time to target";
  if (!std::isfinite(c.target_loss)) {
    s.intro =
        "No target validation loss: the baseline has no val_loss (set eval.every) and none was given "
        "(`--target-loss X` or report.target_loss).";
    return s;
  }
  s.intro = "Target: val loss " + shown(c.target_loss) + " (" + c.target_source +
            "). Wall time (sum of step times), tokens and bytes sent by rank 0 until the evaluated val loss first "
            "reached it, interpolated linearly between evaluations; medians over the runs that reached it, 95% t "
            "intervals. Ranked by time to target; the tokens/s rank is beside it.";
  const std::vector<int> order = target_order(c);
  std::vector<int> by_speed;  // the tokens/s rank is among the groups compared with the baseline
  std::copy_if(order.begin(), order.end(), std::back_inserter(by_speed),
               [&](int g) { return c.groups[g].same_model_data; });
  std::sort(by_speed.begin(), by_speed.end(),
            [&](int a, int b) { return c.groups[a].tokens_per_sec.median > c.groups[b].tokens_per_sec.median; });
  s.columns = {"rank",
               "group",
               "reached",
               "time to target (s)",
               "tokens to target",
               "bytes sent to target",
               "time vs baseline",
               "tokens/s rank",
               "note"};
  bool anyone = false, all_single = true, some_single = false;
  for (std::size_t r = 0; r < order.size(); ++r) {
    const int gi = order[r];
    const CellGroup& g = c.groups[gi];
    const bool ranked = g.reached > 0 && g.same_model_data;
    anyone = anyone || g.reached > 0;
    if (g.reached) {
      all_single = all_single && lacks_interval(g.to_target_s);
      some_single = some_single || lacks_interval(g.to_target_s);
    }
    const auto speed_rank = std::find(by_speed.begin(), by_speed.end(), gi) - by_speed.begin() + 1;
    s.rows.push_back({ranked ? std::to_string(r + 1) : std::string("-"), g.label,
                      std::to_string(g.reached) + " of " + std::to_string(g.finished),
                      g.reached ? with_interval(g.to_target_s) : std::string("not reached"),
                      g.reached ? with_interval(g.to_target_tokens) : "-",
                      g.reached ? with_interval(g.to_target_bytes) : "-",
                      gi == c.baseline    ? std::string("1")
                      : g.same_model_data ? ratio_text(g.to_target)
                                          : "-",
                      g.same_model_data ? std::to_string(speed_rank) : "-", target_note(c, g, gi)});
  }
  s.note = anyone
               ? interval_note(all_single, some_single)
               : "No cell reached the target val loss " + shown(c.target_loss) + ": train longer or give a higher one.";
  return s;
}

}  // namespace

std::vector<ReportSection> comparison_sections(const Comparison& c) {
  if (c.baseline < 0 || c.groups[c.baseline].finished == 0) {
    if (c.baseline >= 0 && !c.groups.empty())
      return {{"Comparison with the baseline",
               "The baseline **" + c.groups[c.baseline].label + "** has no finished cell: nothing to compare with.",
               {},
               {},
               ""}};
    return {};
  }
  return {comparison_section(c), target_section(c)};
}

}  // namespace gradsweep::analysis

#pragma once
// Line charts as PNG through the gnuplot program (Debian's gnuplot-nox): the data and the script are
// written beside the image (<stem>.dat, <stem>.gp), so a plot can be restyled and rerun by hand.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::analysis {

struct ChartSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // drawn in this order
  // Error bars (low, high) parallel to points, or empty for none.
  std::vector<std::pair<double, double>> errors{};
  // gnuplot's style for this series ("points", "lines"); "" = the chart's (linespoints or lines).
  std::string style{};
  int linetype = 0;  // gnuplot's colour (1-8); 0 = by the series' position
  // For report.html (report_page.hpp), which gnuplot ignores: what the series' colour stands for, the same
  // in every chart (its strategy, say), and the ids of the cells behind it (a stacked chart's: one per bar).
  std::string colour_key{};
  std::vector<std::string> cells{};
};

struct Chart {
  std::string stem;  // file name without extension
  std::string title, xlabel, ylabel;
  std::vector<ChartSeries> series;
  bool points = true;  // marks at each point (false: lines only, for long curves)
  bool integer_x = false;
  bool y_from_zero = false;  // quantities whose zero means something (tokens/s, bytes): no cut axis
  bool log_x = false;        // base-2 logarithmic x axis (node counts 1..64)
  // Stacked bars instead of lines: one bar per entry of bar_labels, each series a layer whose points'
  // second values are the layer's height in each bar (in bar order).
  bool stacked = false;
  std::vector<std::string> bar_labels{};
};

// "pngcairo" or "png", whichever this gnuplot has; "" when there is no gnuplot at all.
const std::string& gnuplot_png_terminal();

// Writes <dir>/<stem>.png; throws std::runtime_error with gnuplot's output when it fails.
std::filesystem::path render_chart(const Chart& chart, const std::filesystem::path& dir);

}  // namespace gradsweep::analysis

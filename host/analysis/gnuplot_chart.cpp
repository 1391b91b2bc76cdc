#include "analysis/gnuplot_chart.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <sys/wait.h>

namespace gradsweep::analysis {
namespace fs = std::filesystem;
namespace {

std::string run(const std::string& command, int* exit_code) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    *exit_code = -1;
    return "popen failed";
  }
  std::string output;
  std::array<char, 1024> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

// gnuplot strings are double-quoted; titles come from config values.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// Chart::stacked: one row per bar, "label v1 v2 ...", drawn as gnuplot's row-stacked histogram.
fs::path render_stacked(const Chart& chart, const fs::path& dir, const std::string& terminal) {
  const fs::path data = dir / (chart.stem + ".dat"), script = dir / (chart.stem + ".gp"),
                 png = dir / (chart.stem + ".png");
  {
    std::ofstream out(data);
    for (std::size_t b = 0; b < chart.bar_labels.size(); ++b) {
      out << quoted(chart.bar_labels[b]);
      for (const auto& s : chart.series) out << " " << (b < s.points.size() ? s.points[b].second : 0.0);
      out << "\n";
    }
  }
  {
    std::ofstream gp(script);
    const int width = std::max(900, 120 + 70 * static_cast<int>(chart.bar_labels.size()));
    gp << "set terminal " << terminal << " size " << width << ",600\n"
       << "set output " << quoted(png.string()) << "\n"
       << "set title " << quoted(chart.title) << "\n"
       << "set xlabel " << quoted(chart.xlabel) << "\nset ylabel " << quoted(chart.ylabel) << "\n"
       << "set termoption noenhanced\nset grid ytics\nset key outside right top\n"
       << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
       << "set boxwidth 0.7\nset xtics rotate by -30\nset yrange [0:*]\nplot ";
    for (std::size_t i = 0; !chart.bar_labels.empty() && i < chart.series.size(); ++i)
      gp << (i ? ", \\\n     " : "") << quoted(data.string()) << " using " << i + 2 << (i == 0 ? ":xtic(1)" : "")
         << " linetype " << i % 8 + 1 << " title " << quoted(chart.series[i].title);
    if (chart.series.empty() || chart.bar_labels.empty()) gp << "NaN title \"no data\"";
    gp << "\n";
  }
  int code = 0;
  const std::string output = run("gnuplot " + script.string(), &code);
  if (code != 0 || !fs::exists(png)) throw std::runtime_error("gnuplot " + script.string() + " failed: " + output);
  return png;
}

}  // namespace

const std::string& gnuplot_png_terminal() {
  static const std::string terminal = [] {
    int code = 0;
    for (const char* t : {"pngcairo", "png"}) {
      run(std::string("gnuplot -e 'set terminal ") + t + "' </dev/null", &code);
      if (code == 0) return std::string(t);
    }
    return std::string();
  }();
  return terminal;
}

fs::path render_chart(const Chart& chart, const fs::path& dir) {
  const std::string& terminal = gnuplot_png_terminal();
  if (terminal.empty()) throw std::runtime_error("gnuplot not found (Debian package gnuplot-nox)");
  fs::create_directories(dir);
  if (chart.stacked) return render_stacked(chart, dir, terminal);
  const fs::path data = dir / (chart.stem + ".dat"), script = dir / (chart.stem + ".gp"),
                 png = dir / (chart.stem + ".png");
  {
    std::ofstream out(data);
    // One block per series, separated by two blank lines: gnuplot's `index`.
    for (const auto& s : chart.series) {
      out << "# " << s.title << "\n";
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        out << s.points[i].first << " " << s.points[i].second;
        if (!s.errors.empty()) out << " " << s.errors[i].first << " " << s.errors[i].second;
        out << "\n";
      }
      out << "\n\n";
    }
  }
  {
    std::ofstream gp(script);
    // Long legends go below the plot, one entry a line, so that they never cover the curves; the image
    // grows with them.
    std::size_t longest = 0;
    for (const auto& s : chart.series) longest = std::max(longest, s.title.size());
    const bool below = longest > 28;
    const int height = 560 + (below ? 20 + 20 * static_cast<int>(chart.series.size()) : 0);
    gp << "set terminal " << terminal << " size 900," << height << "\n"
       << "set output " << quoted(png.string()) << "\n"
       << "set title " << quoted(chart.title) << "\n"
       << "set xlabel " << quoted(chart.xlabel) << "\nset ylabel " << quoted(chart.ylabel) << "\n"
       << "set termoption noenhanced\n"  // titles are config values: lstm_lm is no subscript
       << "set grid\n"
       << (below ? "set bmargin " + std::to_string(chart.series.size() + 4) +  // the x label, then the key
                       "\nset key bmargin left Left reverse vertical maxrows " + std::to_string(chart.series.size()) +
                       "\n"
                 : std::string("set key outside right top\n"));
    // A point on the frame hides its marker: room beside the first and last node counts, and, for axes from
    // zero (autoscale would start a throughput axis at its smallest point), above the largest value.
    const char* top = chart.y_from_zero ? "graph 0.05" : "0";
    if (chart.integer_x)
      gp << "set xtics 1\nset offsets 0.25, 0.25, " << top << ", 0\n";
    else if (chart.y_from_zero)
      gp << "set offsets 0, 0, " << top << ", 0\n";
    if (chart.y_from_zero) gp << "set yrange [0:*]\n";
    if (chart.log_x) gp << "set logscale x 2\nset offsets graph 0.03, graph 0.03, " << top << ", 0\n";
    gp << "plot ";
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
      // Error bars of series at the same x would hide each other: shift each series a little sideways.
      const double dodge = chart.integer_x ? (static_cast<double>(i) - (chart.series.size() - 1) / 2.0) * 0.06 : 0;
      gp << (i ? ", \\\n     " : "") << quoted(data.string()) << " index " << i
         << (chart.series[i].errors.empty() ? " using 1:2 with "
                                            : " using ($1+" + std::to_string(dodge) + "):2:3:4 with ")
         << (!chart.series[i].errors.empty()  ? "yerrorlines"
             : !chart.series[i].style.empty() ? chart.series[i].style
             : chart.points                   ? "linespoints"
                                              : "lines")
         // gnuplot has 8 colours: the next 8 lines are dashed, so that none looks like another.
         << " linetype " << (chart.series[i].linetype > 0 ? chart.series[i].linetype : static_cast<int>(i % 8) + 1)
         << " dashtype " << i / 8 % 5 + 1 << " title " << quoted(chart.series[i].title);
    }
    if (chart.series.empty()) gp << "NaN title \"no data\"";
    gp << "\n";
  }
  int code = 0;
  const std::string output = run("gnuplot " + script.string(), &code);
  if (code != 0 || !fs::exists(png)) throw std::runtime_error("gnuplot " + script.string() + " failed: " + output);
  return png;
}

}  // namespace gradsweep::analysis

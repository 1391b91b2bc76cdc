#include "experiment/gnuplot_chart.hpp"

#include <array>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <sys/wait.h>

namespace gradsweep::experiment {
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
  const fs::path data = dir / (chart.stem + ".dat"), script = dir / (chart.stem + ".gp"),
                 png = dir / (chart.stem + ".png");
  {
    std::ofstream out(data);
    // One block per series, separated by two blank lines: gnuplot's `index`.
    for (const auto& s : chart.series) {
      out << "# " << s.title << "\n";
      for (const auto& [x, y] : s.points) out << x << " " << y << "\n";
      out << "\n\n";
    }
  }
  {
    std::ofstream gp(script);
    gp << "set terminal " << terminal << " size 900,560\n"
       << "set output " << quoted(png.string()) << "\n"
       << "set title " << quoted(chart.title) << "\n"
       << "set xlabel " << quoted(chart.xlabel) << "\nset ylabel " << quoted(chart.ylabel) << "\n"
       << "set termoption noenhanced\n"  // titles are config values: lstm_lm is no subscript
       << "set grid\nset key outside right top\n";
    if (chart.integer_x) gp << "set xtics 1\nset offsets 0.25, 0.25, 0, 0\n";
    gp << "plot ";
    for (std::size_t i = 0; i < chart.series.size(); ++i)
      gp << (i ? ", \\\n     " : "") << quoted(data.string()) << " index " << i << " using 1:2 with "
         << (chart.points ? "linespoints" : "lines") << " title " << quoted(chart.series[i].title);
    if (chart.series.empty()) gp << "NaN title \"no data\"";
    gp << "\n";
  }
  int code = 0;
  const std::string output = run("gnuplot " + script.string(), &code);
  if (code != 0 || !fs::exists(png)) throw std::runtime_error("gnuplot " + script.string() + " failed: " + output);
  return png;
}

}  // namespace gradsweep::experiment

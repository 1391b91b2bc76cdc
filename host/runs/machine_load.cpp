#include "runs/machine_load.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace gradsweep::runs {
namespace {

double seconds(const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; }

double own_cpu() {
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) + seconds(children.ru_stime);
}

// user + nice + system + irq + softirq + steal of the "cpu" line, in seconds.
double busy_cpu() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return -1;
  std::istringstream fields(line.substr(4));
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(ticks > 0 ? ticks : 100);
}

}  // namespace

LoadSample sample_load() {
  LoadSample s;
  std::ifstream in("/proc/loadavg");
  in >> s.loadavg[0] >> s.loadavg[1] >> s.loadavg[2];
  if (!in) s.loadavg = {-1, -1, -1};
  s.busy_cpu_s = busy_cpu();
  s.own_cpu_s = own_cpu();
  s.when = std::chrono::steady_clock::now();
  return s;
}

nlohmann::json load_record(const LoadSample& start, const LoadSample& end) {
  nlohmann::json j = nlohmann::json::object();
  if (start.loadavg[0] >= 0) j["loadavg_start"] = start.loadavg;
  if (end.loadavg[0] >= 0) j["loadavg_end"] = end.loadavg;
  const double wall = std::chrono::duration<double>(end.when - start.when).count();
  if (start.busy_cpu_s >= 0 && end.busy_cpu_s >= 0 && wall > 0) {
    // Tick counts and rusage round differently: a small negative remainder is none.
    const double other = std::max(0.0, (end.busy_cpu_s - start.busy_cpu_s) - (end.own_cpu_s - start.own_cpu_s));
    j["other_cpu_s"] = other;
    j["other_cores"] = other / wall;
    j["wall_s"] = wall;
  }
  return j;
}

bool load_was_high(const nlohmann::json& record, int cpus) {
  if (!record.is_object() || !record.contains("other_cores") || !record["other_cores"].is_number()) return false;
  return record["other_cores"].get<double>() >= 0.25 * std::max(1, cpus);
}

}  // namespace gradsweep::runs

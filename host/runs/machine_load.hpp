#pragma once
// How busy the machine was while a cell ran, for provenance.json's "load" and the report's warning.
// Sampled before the job starts and after it ends (by the local launcher):
//   loadavg_start, loadavg_end   /proc/loadavg's 1, 5 and 15 minute load averages
//   other_cpu_s                  CPU time all processes used over the run (/proc/stat) minus the job's own
//                                (its reaped processes, getrusage) and the driver's: what others took
//   other_cores                  other_cpu_s / wall seconds: cores' worth the job did not have
// Reading both files costs microseconds. Off Linux (no /proc) the fields are absent.
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>

namespace gradsweep::runs {

struct LoadSample {
  std::array<double, 3> loadavg{-1, -1, -1};
  double busy_cpu_s = -1;  // whole machine, since boot
  double own_cpu_s = 0;    // this process and its reaped children
  std::chrono::steady_clock::time_point when;
};

LoadSample sample_load();

// The "load" object of provenance.json, from samples taken before and after the job.
nlohmann::json load_record(const LoadSample& start, const LoadSample& end);

// Other processes' use counted as high: a quarter of the machine's cores or more, on average.
bool load_was_high(const nlohmann::json& record, int cpus);

}  // namespace gradsweep::runs

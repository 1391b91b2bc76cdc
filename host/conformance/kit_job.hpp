#pragma once
// One real `gradsweep train` job of the check: this binary under `mpirun` (the local launcher's flags,
// experiment/launch/launcher_local.hpp; a plain process for one rank), with a deadline after which its process
// group gets SIGTERM, then SIGKILL, and what it left behind read back.
#include "conformance/kit_workspace.hpp"

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::conformance {

struct JobSpec {
  std::string label;  // its directory under the workspace's jobs/, and its name in messages
  int ranks = 1;
  std::vector<std::string> overrides;  // --set KEY=VALUE
  std::vector<std::string> flags{};    // more arguments of `gradsweep train` (--stop-after N)
  std::vector<std::string> env{};      // VAR=VALUE for every rank
  double deadline_seconds = 300;
  bool again = false;     // into the directory a job with this label left (resuming its checkpoint)
  std::string copy_of{};  // starts from a copy of the directory the job with this label left
};

struct JobRun {
  std::string label;
  int ranks = 1;
  std::filesystem::path dir;  // the cell directory (--out)
  int exit_code = -1;
  bool timed_out = false;
  double seconds = 0;
  std::string output;              // mpirun's and every rank's stdout and stderr
  std::vector<double> losses;      // metrics.jsonl, one per step
  std::optional<double> val_loss;  // summary.json

  bool ok() const { return exit_code == 0 && !timed_out; }
  // "exit 2: <the last line that says error>", for a finding's reason.
  std::string failure() const;
};

// A started job; finish() waits for it (or its deadline) and reads it back.
class Job {
 public:
  Job(const Workspace& ws, JobSpec spec);
  JobRun finish();

 private:
  JobSpec spec_;
  std::filesystem::path dir_, log_;
  pid_t pid_ = -1;
  double started_ = 0;
};

inline JobRun run_job(const Workspace& ws, JobSpec spec) { return Job(ws, std::move(spec)).finish(); }

}  // namespace gradsweep::conformance

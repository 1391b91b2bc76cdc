#pragma once
// The Slurm client commands the launcher uses (sbatch, squeue, sacct, scontrol, scancel), run as child
// processes with an argument vector (no shell), their output parsed into small structs. Every failure is a
// SlurmError naming the command, its exit code and what it printed, with a hint when Slurm is absent or
// the controller is unreachable.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsweep::experiment::slurm {

class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProgramOutput {
  int exit_code = -1;  // 127: not found; 128+N: killed by signal N
  std::string out, err;
};

// Runs argv[0] (looked up on PATH) with argv, stdin from /dev/null, and waits for it.
ProgramOutput run_program(const std::vector<std::string>& argv);

// Throws SlurmError unless `tool` (sbatch, squeue, ...) is on PATH: "sbatch not found on PATH: ...".
void require_slurm_tool(const std::string& tool);

// sbatch --parsable SCRIPT -> the job id ("1234"; a ";cluster" suffix is dropped).
std::string sbatch_submit(const std::string& script);

// One array task as squeue or the accounting sees it.
struct TaskState {
  std::string job;        // "1234_5"
  std::string array_job;  // "1234"
  int task = -1;          // 5; -1 when the line is not an array task
  std::string state;      // PENDING, RUNNING, COMPLETING, COMPLETED, CANCELLED, TIMEOUT, FAILED, ...
  std::string reason;     // squeue's reason, or accounting's ("None" dropped)
  std::string exit_code;  // accounting only: "rc:signal", e.g. "0:15"
};

// The tasks of `array_jobs` still in the queue (pending, running, completing, requeued), one per task
// (squeue -r). Jobs the controller has forgotten are simply absent.
std::vector<TaskState> squeue_tasks(const std::vector<std::string>& array_jobs);

// How the tasks of `array_job` ended, from sacct; where accounting storage is disabled (a small cluster
// without slurmdbd, like the tests'), from `scontrol show job`, which keeps ended jobs for MinJobAge.
std::vector<TaskState> ended_tasks(const std::string& array_job);

// scancel each id ("1234" or "1234_5"); errors are thrown.
void scancel(const std::vector<std::string>& jobs);

// The parsers, for tests.
std::vector<TaskState> parse_squeue(const std::string& text);    // "%i|%T|%r" lines
std::vector<TaskState> parse_sacct(const std::string& text);     // -P JobID,State,ExitCode,Reason lines
std::vector<TaskState> parse_scontrol(const std::string& text);  // `scontrol -o show job` lines

}  // namespace gradsweep::experiment::slurm

#include "experiment/slurm/batch_script.hpp"

#include "experiment/slurm/shell_quote.hpp"
#include "util/atomic_file.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace gradsweep::experiment::slurm {
namespace fs = std::filesystem;

namespace {

// Partition, account and QOS names: Slurm's own names are letters, digits, '_', '-' and '.'; a partition
// list is comma-separated. Anything else is refused rather than quoted: it would not be a valid name anyway.
void check_slurm_name(const std::string& value, const char* key) {
  for (unsigned char c : value)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.' && c != ',')
      throw std::invalid_argument(std::string(key) + ": '" + value +
                                  "' is not a Slurm name (letters, digits, '_', '-', '.', ',' only)");
}

// A value inside an #SBATCH line. Bash never runs these lines (they are comments); sbatch parses them with
// its own rules, where double quotes group. A line break would end the line and start a line of bash, and
// a double quote would end the group: both are refused.
std::string sbatch_quoted(const std::string& value, const char* key) {
  check_single_line(value, key);
  if (value.find('"') != std::string::npos)
    throw std::invalid_argument(std::string(key) + ": '" + value + "' may not hold a double quote");
  return "\"" + value + "\"";
}

// An extra line from launcher.slurm.extra, "--name" or "--name=value": the name is checked, the value
// grouped in double quotes (sbatch splits #SBATCH lines at spaces, so "--comment=a b" would otherwise be
// two words, the second an invalid directive).
std::string sbatch_extra_option(const std::string& extra) {
  const char* key = "launcher.slurm.extra";
  check_single_line(extra, key);
  const auto eq = extra.find('=');
  const std::string name = extra.substr(0, eq);
  bool ok = name.size() > 2 && name.compare(0, 2, "--") == 0;
  for (std::size_t i = 2; ok && i < name.size(); ++i)
    ok = std::isalnum(static_cast<unsigned char>(name[i])) || name[i] == '-' || name[i] == '_';
  if (!ok)
    throw std::invalid_argument(std::string(key) + ": '" + extra +
                                "' is not an sbatch option of the form --name or --name=value");
  if (eq == std::string::npos) return name;
  return name + "=" + sbatch_quoted(extra.substr(eq + 1), key);
}

// Slurm expands %A, %a, %j ... in --output; a path with its own '%' would be rewritten.
std::string log_pattern(const BatchArray& array) {
  const std::string dir = array.script_dir.string();
  if (dir.find('%') != std::string::npos)
    throw std::invalid_argument("output directory '" + dir + "' may not hold '%' (Slurm expands it in log names)");
  return sbatch_quoted((array.script_dir / (array.name + "-%A_%a.out")).string(), "output directory");
}

// --nodes: N, or K-N for an elastic array.
std::string nodes_range(const BatchArray& a) {
  if (a.min_nodes < 0 || a.min_nodes > a.nodes)
    throw std::invalid_argument("launcher.elastic.min_nodes: " + std::to_string(a.min_nodes) +
                                " is not between 0 and the cell's " + std::to_string(a.nodes) + " node(s)");
  return a.elastic() ? std::to_string(a.min_nodes) + "-" + std::to_string(a.nodes) : std::to_string(a.nodes);
}

void check_positive(int value, const char* key) {
  if (value < 1) throw std::invalid_argument(std::string(key) + ": must be at least 1, got " + std::to_string(value));
}

void check_tasks(const BatchArray& array) {
  if (array.tasks.empty()) throw std::invalid_argument("job array " + array.name + " has no cells");
  for (const ArrayTask& t : array.tasks) {
    check_plain_token(t.cell_id, "cell id");
    check_plain_token(t.config_hash, "config hash");
    const std::string dir = t.cell_dir.string();
    check_single_line(dir, "cell directory");
    if (dir.find('\t') != std::string::npos)
      throw std::invalid_argument("cell directory '" + dir + "' may not hold a tab (the cells file is tab-separated)");
  }
}

// The bash body. Every ${...} below expands a variable set from the cells file or Slurm's environment,
// always inside double quotes, so its content is never parsed as code.
constexpr const char* kBody = R"BODY(
set -u
line=$(( SLURM_ARRAY_TASK_ID + 1 ))
IFS=$'\t' read -r cell_id config_hash cell_dir < <(sed -n "${line}p" "$cells_file")
if [ -z "${cell_dir:-}" ]; then
  echo "gradsweep: no line ${line} in ${cells_file} for array task ${SLURM_ARRAY_TASK_ID}" >&2
  exit 2
fi
job="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
restarts="${SLURM_RESTART_COUNT:-0}"

# status.json as runs/cell_status.hpp defines it. The fields are fixed words, digits, the validated config hash
# and the job id, so no JSON escaping is needed. Written to a temporary file and renamed: atomic.
write_status() {  # state exit_code reason
  local tmp="${cell_dir}/status.json.tmp.$$"
  printf '{\n  "state": "%s",\n  "config_hash": "%s",\n  "reason": "%s",\n  "exit_code": %s,\n  "launcher": "slurm",\n  "job": "%s",\n  "updated": "%s"\n}\n' \
    "$1" "$config_hash" "$3" "$2" "$job" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp" && mv -f "$tmp" "${cell_dir}/status.json"
}

# Threads per rank: the plan's number, else what Slurm gave each task, else `gradsweep train` decides.
if [ "$threads" -eq 0 ] && [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then threads="$SLURM_CPUS_PER_TASK"; fi
thread_args=()
if [ "$threads" -gt 0 ]; then
  thread_args=(--set "runtime.threads=${threads}")
  export OMP_NUM_THREADS="$threads"
fi

# An elastic cell (min_nodes > 0) asked for min_nodes to nodes nodes: provenance.json records which it was given
# (a run on fewer than the run before it is a change of size), and srun starts ranks_per_node ranks on each.
provenance_args=()
size_args=()
if [ "$min_nodes" -gt 0 ]; then
  node_list=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
  provenance_args=(--elastic "${min_nodes}/${nodes}" --job "$job" --restart "$restarts" --nodes "$node_list")
  size_args=(--nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node="$ranks_per_node")
fi

write_status running -1 "slurm job ${job} on $(hostname -s), restart ${restarts}"
# provenance.json from this node (its host, CPU, GPU, libraries). Its output goes to Slurm's log of the task,
# not launcher.log, whose error lines explain a failed cell; a failure here must not fail the cell.
"$gradsweep" cell-provenance "$cell_dir" --start "${provenance_args[@]}" ||
  echo "gradsweep: could not write ${cell_dir}/provenance.json" >&2
echo "=== gradsweep: slurm job ${job} (restart ${restarts}) on $(hostname -s) at $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "${cell_dir}/launcher.log"
# Any rank that fails ends the step (--kill-on-bad-exit): the others would wait for it in a collective.
srun --mpi=pmix --kill-on-bad-exit=1 "${size_args[@]}" "$gradsweep" train "${cell_dir}/cell.yaml" --out "$cell_dir" "${thread_args[@]}" >> "${cell_dir}/launcher.log" 2>&1
rc=$?
# The end time before the final status: whoever sees the status (the follower, a test) sees it complete.
"$gradsweep" cell-provenance "$cell_dir" --end || echo "gradsweep: could not write ${cell_dir}/provenance.json" >&2
if [ "$rc" -eq 0 ] && grep -qs '"status": *"ok"' "${cell_dir}/summary.json"; then
  write_status ok 0 ""
else
  write_status failed "$rc" "srun exited with code ${rc} in slurm job ${job}; see launcher.log"
fi
exit "$rc"
)BODY";

}  // namespace

std::string array_range(std::size_t tasks, int max_concurrent) {
  std::string range = "0-" + std::to_string(tasks == 0 ? 0 : tasks - 1);
  if (max_concurrent > 0) range += "%" + std::to_string(max_concurrent);
  return range;
}

std::string task_command_line(const BatchArray& array, const fs::path& cell_dir) {
  std::vector<std::string> words = {array.gradsweep_binary.string(), "train", (cell_dir / "cell.yaml").string(),
                                    "--out", cell_dir.string()};
  if (array.threads_per_rank > 0)
    words.insert(words.end(), {"--set", "runtime.threads=" + std::to_string(array.threads_per_rank)});
  // An elastic array's task starts its ranks on the nodes it was given (the script's size_args).
  const std::string size =
      array.elastic()
          ? "--nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=" + std::to_string(array.ranks_per_node) + " "
          : "";
  return "srun --mpi=pmix --kill-on-bad-exit=1 " + size + shell_join(words);
}

std::string batch_script_text(const BatchArray& a) {
  check_plain_token(a.name, "job array name");
  check_positive(a.nodes, "nodes");
  check_positive(a.ranks_per_node, "ranks_per_node");
  check_tasks(a);
  const runs::SlurmSettings& s = a.settings;
  if (a.gpus_per_node < 0) throw std::invalid_argument("gpus_per_node: must be 0 or more");
  if (a.threads_per_rank < 0) throw std::invalid_argument("launcher.threads: must be 0 or more");
  if (s.cpus_per_task < 0) throw std::invalid_argument("launcher.slurm.cpus_per_task: must be 0 or more");
  if (s.max_concurrent < 0) throw std::invalid_argument("launcher.slurm.max_concurrent: must be 0 or more");

  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# Written by `gradsweep run --launcher slurm`: " << a.tasks.size() << " cell(s) of one resource shape, one\n"
      << "# array task per cell (the cells file maps the task index to a cell). Submit with sbatch; a requeued\n"
      << "# task resumes its cell from the checkpoint.\n"
      << "#SBATCH --job-name=gradsweep-" << a.name << "\n"
      << "#SBATCH --array=" << array_range(a.tasks.size(), s.max_concurrent) << "\n"
      << "#SBATCH --nodes=" << nodes_range(a) << "\n";
  if (a.elastic())
    // Not --ntasks-per-node: sbatch would fix the task count at min_nodes x ranks, and with it the job at
    // min_nodes nodes even when all are free. CPUs per node instead; srun places the ranks.
    out << "#SBATCH --mincpus=" << a.ranks_per_node * std::max(1, s.cpus_per_task) << "\n";
  else
    out << "#SBATCH --ntasks-per-node=" << a.ranks_per_node << "\n";
  if (s.cpus_per_task > 0) out << "#SBATCH --cpus-per-task=" << s.cpus_per_task << "\n";
  if (a.gpus_per_node > 0) out << "#SBATCH --gpus-per-node=" << a.gpus_per_node << "\n";
  if (!a.time_limit.empty()) {
    check_slurm_time(a.time_limit, "time limit");
    out << "#SBATCH --time=" << a.time_limit << "\n";
  }
  const std::pair<const char*, const std::string*> names[] = {
      {"partition", &s.partition}, {"account", &s.account}, {"qos", &s.qos}};
  for (const auto& [key, value] : names)
    if (!value->empty()) {
      check_slurm_name(*value, (std::string("launcher.slurm.") + key).c_str());
      out << "#SBATCH --" << key << "=" << *value << "\n";
    }
  if (!s.constraint.empty())
    out << "#SBATCH --constraint=" << sbatch_quoted(s.constraint, "launcher.slurm.constraint") << "\n";
  out << "#SBATCH --requeue\n"
      << "#SBATCH --open-mode=append\n"
      << "#SBATCH --output=" << log_pattern(a) << "\n"
      << "#SBATCH --error=" << log_pattern(a) << "\n";
  for (const std::string& extra : s.extra) out << "#SBATCH " << sbatch_extra_option(extra) << "\n";
  out << "\ngradsweep=" << shell_quote(a.gradsweep_binary.string()) << "\n"
      << "cells_file=" << shell_quote(a.cells_file().string()) << "\n"
      << "threads=" << a.threads_per_rank << "\n"
      << "nodes=" << a.nodes << "\n"
      << "min_nodes=" << (a.elastic() ? a.min_nodes : 0) << "\n"
      << "ranks_per_node=" << a.ranks_per_node << "\n";
  if (!s.setup.empty()) {
    out << "\n# launcher.slurm.setup, as written in the experiment file: the nodes' environment for the ranks\n";
    for (const std::string& line : s.setup) out << line << "\n";
  }
  out << kBody;
  return out.str();
}

std::string cells_file_text(const BatchArray& a) {
  check_tasks(a);
  std::string text;
  for (const ArrayTask& t : a.tasks) text += t.cell_id + "\t" + t.config_hash + "\t" + t.cell_dir.string() + "\n";
  return text;
}

fs::path write_batch_array(const BatchArray& a) {
  const std::string script = batch_script_text(a);  // checks everything before anything is written
  util::write_file_atomically(a.cells_file(), cells_file_text(a));
  util::write_file_atomically(a.script_file(), script);
  fs::permissions(a.script_file(), fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  return a.script_file();
}

}  // namespace gradsweep::experiment::slurm

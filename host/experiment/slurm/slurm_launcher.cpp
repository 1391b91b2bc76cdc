#include "experiment/slurm/slurm_launcher.hpp"

#include "experiment/launch/run_order.hpp"

#include "experiment/slurm/batch_script.hpp"
#include "experiment/slurm/elastic_runs.hpp"
#include "experiment/slurm/resource_shape.hpp"
#include "experiment/slurm/shell_quote.hpp"
#include "experiment/slurm/slurm_commands.hpp"
#include "experiment/slurm/task_outcome.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
using namespace slurm;

namespace {

// One cell handed to Slurm, followed until it has an outcome.
struct Tracked {
  const runs::PlannedCell* cell;
  std::string array_job;  // "1234"
  std::string job;        // "1234_5"
  bool started = false;
  bool finished = false;
  int polls_unaccounted = 0;  // polls since it left the queue with neither a status nor a Slurm record
};

// A task that left the queue without a status and that accounting does not know yet is given this many
// polls before it counts as lost (the controller writes its record a moment after the job ends).
constexpr int kPollsBeforeLost = 3;
// squeue failing this many times in a row (the controller down for about a minute) ends the follow.
constexpr int kFailedPollsBeforeGivingUp = 30;

std::string compact_utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%S", &tm);
  return buffer;
}

BatchArray make_array(const ShapeGroup& group, const std::string& stamp, const fs::path& script_dir) {
  const runs::PlannedCell& first = *group.cells.front();
  if (first.rank_command.empty())
    throw std::invalid_argument("cell " + first.id + " has no rank command (the gradsweep binary to run)");
  BatchArray a;
  a.name = stamp + "-" + group.name;
  a.nodes = first.nodes;
  a.min_nodes = first.elastic_min_nodes;
  a.ranks_per_node = first.ranks_per_node;
  a.gpus_per_node = first.gpus_per_node > 0 ? first.gpus_per_node : first.slurm.gpus_per_node;
  a.time_limit = first.time_limit.empty() ? first.slurm.time : first.time_limit;
  a.settings = first.slurm;
  a.threads_per_rank = first.threads_per_rank;
  a.gradsweep_binary = fs::absolute(first.rank_command.front());
  a.script_dir = script_dir;
  for (const runs::PlannedCell* c : group.cells) a.tasks.push_back({c->id, c->config_hash, fs::absolute(c->dir)});
  return a;
}

void record_submission(const fs::path& script_dir, const std::string& array_job, const BatchArray& a) {
  nlohmann::json cells = nlohmann::json::array();
  for (const ArrayTask& t : a.tasks) cells.push_back(t.cell_id);
  const nlohmann::json line{{"job", array_job},
                            {"script", a.script_file().string()},
                            {"cells", cells},
                            {"submitted", runs::utc_now_iso8601()}};
  std::ofstream(script_dir / "jobs.jsonl", std::ios::app) << line.dump() << "\n";
}

void count(LaunchResult& result, runs::CellState state) {
  switch (state) {
    case runs::CellState::Ok: ++result.ok; break;
    case runs::CellState::Timeout: ++result.timeout; break;
    case runs::CellState::Interrupted: ++result.interrupted; break;
    default: ++result.failed; break;
  }
}

class SlurmLauncher final : public Launcher {
 public:
  explicit SlurmLauncher(SlurmLauncherOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "slurm"; }

  LaunchResult run(const std::vector<runs::PlannedCell>& cells, const LaunchOptions& options,
                   ProgressSink& progress) override {
    // Array tasks start in index order, so the array lists repeats interleaved as the local launcher runs
    // them (run_order.hpp): a drift of the cluster's load falls on every configuration alike.
    std::vector<runs::PlannedCell> todo;
    for (const runs::PlannedCell& c : interleaved_order(cells))
      if (!runs::is_cell_done(c.dir, c.config_hash)) todo.push_back(c);
    LaunchResult result;
    if (todo.empty()) return result;

    // Cells whose task from an earlier run (--no-wait) is still queued or running are followed, not
    // submitted again: two jobs training one cell would write the same checkpoint.
    std::vector<Tracked> tracked = options.dry_run ? std::vector<Tracked>{} : still_queued(cells);
    for (const Tracked& t : tracked) {
      out() << "cell " << t.cell->id << " is still in Slurm's queue as job " << t.job << ": following it\n";
      todo.erase(
          std::find_if(todo.begin(), todo.end(), [&](const runs::PlannedCell& c) { return c.id == t.cell->id; }));
    }
    const std::size_t attached = tracked.size();
    if (!todo.empty()) {
      std::vector<Tracked> submitted = submit(todo, cells, options.dry_run);
      tracked.insert(tracked.end(), submitted.begin(), submitted.end());
    }
    if (options.dry_run || !options.wait) {
      result.submitted = static_cast<int>(todo.size() + attached);
      if (!options.dry_run)
        out() << "not waiting (--no-wait): `gradsweep status " << options_.out_dir.string()
              << "` shows progress; squeue --jobs=" << array_list(tracked) << "\n";
      return result;
    }
    follow(tracked, options, progress, result);
    return result;
  }

 private:
  std::ostream& out() const { return options_.messages != nullptr ? *options_.messages : std::cout; }

  static std::string array_list(const std::vector<Tracked>& tracked) {
    std::vector<std::string> arrays;
    for (const Tracked& t : tracked)
      if (std::find(arrays.begin(), arrays.end(), t.array_job) == arrays.end()) arrays.push_back(t.array_job);
    std::string list;
    for (const std::string& a : arrays) list += (list.empty() ? "" : ",") + a;
    return list;
  }

  // The cells of `cells` (pointers into the caller's vector) whose status.json names a Slurm task of the
  // same configuration that squeue still lists as active.
  static std::vector<Tracked> still_queued(const std::vector<runs::PlannedCell>& cells) {
    std::vector<std::pair<const runs::PlannedCell*, runs::CellStatus>> candidates;
    std::vector<std::string> arrays;
    for (const runs::PlannedCell& c : cells) {
      runs::CellStatus s = runs::read_cell_status(c.dir);
      if (s.launcher != "slurm" || s.job.empty() || s.config_hash != c.config_hash) continue;
      if (s.state != runs::CellState::Pending && s.state != runs::CellState::Running) continue;
      const std::string array = s.job.substr(0, s.job.find('_'));
      if (std::find(arrays.begin(), arrays.end(), array) == arrays.end()) arrays.push_back(array);
      candidates.emplace_back(&c, std::move(s));
    }
    std::vector<Tracked> tracked;
    if (candidates.empty()) return tracked;
    require_slurm_tool("squeue");
    const std::vector<TaskState> queued = squeue_tasks(arrays);
    for (const auto& [cell, status] : candidates)
      for (const TaskState& q : queued)
        if (q.job == status.job && is_active_state(q.state)) tracked.push_back({cell, q.array_job, q.job});
    return tracked;
  }

  // Writes every array's script and cells file first (a bad value is refused before anything is
  // submitted), then submits them in order.
  // The Tracked entries point into `all` (the caller's cells, alive while run() follows them).
  std::vector<Tracked> submit(const std::vector<runs::PlannedCell>& todo, const std::vector<runs::PlannedCell>& all,
                              bool dry_run) {
    const fs::path script_dir = fs::absolute(options_.out_dir) / "slurm";
    fs::create_directories(script_dir);
    const std::string stamp = compact_utc_stamp();
    std::vector<BatchArray> arrays;
    for (const ShapeGroup& group : group_by_shape(todo)) {
      arrays.push_back(make_array(group, stamp, script_dir));
      write_batch_array(arrays.back());
      for (const runs::PlannedCell* c : group.cells)
        util::write_file_atomically(c->dir / "command.txt",
                                    task_command_line(arrays.back(), fs::absolute(c->dir)) + "\n");
    }
    std::vector<Tracked> tracked;
    if (dry_run) {
      for (const BatchArray& a : arrays)
        out() << "dry run: " << a.tasks.size() << " cell(s) in " << a.script_file().string() << " (submit with: sbatch "
              << shell_quote(a.script_file().string()) << ")\n";
      return tracked;
    }
    require_slurm_tool("sbatch");
    require_slurm_tool("squeue");
    for (const BatchArray& a : arrays) {
      const std::string array_job = sbatch_submit(a.script_file().string());
      record_submission(script_dir, array_job, a);
      out() << "submitted job array " << array_job << ": " << a.tasks.size() << " cell(s), "
            << a.script_file().filename().string() << "\n";
      for (std::size_t i = 0; i < a.tasks.size(); ++i) {
        const runs::PlannedCell* cell = nullptr;
        for (const runs::PlannedCell& c : all)
          if (c.id == a.tasks[i].cell_id) cell = &c;
        Tracked t{cell, array_job, array_job + "_" + std::to_string(i)};
        runs::CellStatus pending;
        pending.state = runs::CellState::Pending;
        pending.config_hash = cell->config_hash;
        pending.launcher = "slurm";
        pending.job = t.job;
        pending.reason = "submitted to Slurm as job " + t.job;
        runs::write_cell_status(cell->dir, pending);
        tracked.push_back(t);
      }
    }
    return tracked;
  }

  void follow(std::vector<Tracked>& tracked, const LaunchOptions& options, ProgressSink& progress,
              LaunchResult& result) {
    std::vector<std::string> arrays;
    for (const Tracked& t : tracked)
      if (std::find(arrays.begin(), arrays.end(), t.array_job) == arrays.end()) arrays.push_back(t.array_job);
    std::size_t remaining = tracked.size();
    bool cancelled = false;
    int failed_polls = 0;
    while (remaining > 0) {
      if (options.stop_requested != nullptr && options.stop_requested->load()) {
        out() << "stopped following; the jobs keep running (scancel " << array_list(tracked)
              << " ends them); `gradsweep status " << options_.out_dir.string() << "` shows progress\n";
        result.stopped = true;
        result.submitted = static_cast<int>(remaining);
        return;
      }
      std::map<std::string, TaskState> queued;
      try {
        for (const TaskState& t : squeue_tasks(arrays)) queued[t.job] = t;
        failed_polls = 0;
      } catch (const SlurmError& e) {
        // A busy or restarting controller is not the end of the sweep: the jobs go on without us.
        if (++failed_polls >= kFailedPollsBeforeGivingUp) throw;
        out() << "warning: " << e.what() << " (retrying)\n";
        sleep_unless_stopped(options);
        continue;
      }
      std::map<std::string, std::vector<TaskState>> ended;  // per array, asked at most once per poll
      for (Tracked& t : tracked) {
        if (t.finished) continue;
        const auto q = queued.find(t.job);
        if (q != queued.end() && is_active_state(q->second.state)) {
          if (q->second.state != "RUNNING") continue;
          if (!t.started)
            progress.cell_started(*t.cell);
          else
            progress.cell_running(*t.cell);
          t.started = true;
          continue;
        }
        std::optional<TaskState> record = q != queued.end() ? std::optional<TaskState>(q->second) : std::nullopt;
        if (!ended.count(t.array_job)) {
          try {
            ended[t.array_job] = ended_tasks(t.array_job);
          } catch (const SlurmError& e) {
            out() << "warning: " << e.what() << "\n";
            ended[t.array_job] = {};  // the task waits for a later poll, or its status.json decides
          }
        }
        for (const TaskState& e : ended[t.array_job])
          if (e.job == t.job) record = e;
        if (record && is_active_state(record->state)) continue;  // requeued between the two calls
        const runs::CellStatus written = runs::read_cell_status(t.cell->dir);
        const bool script_wrote =
            written.job == t.job && (written.state == runs::CellState::Ok || written.state == runs::CellState::Failed);
        if (!script_wrote && !record && ++t.polls_unaccounted < kPollsBeforeLost) continue;
        runs::CellStatus status = task_outcome(t.cell->dir, t.cell->config_hash, t.job, written, record);
        status.resizes = recorded_resizes(t.cell->dir);  // an elastic cell's runs on fewer nodes
        runs::write_cell_status(t.cell->dir, status);
        if (!t.started) progress.cell_started(*t.cell);
        progress.cell_finished(*t.cell, status);
        t.finished = true;
        --remaining;
        count(result, status.state);
        if (options.fail_fast && status.state != runs::CellState::Ok && !cancelled && remaining > 0) {
          out() << "cell " << t.cell->id << " failed and --fail-fast is set: cancelling job arrays "
                << array_list(tracked) << "\n";
          scancel(arrays);
          cancelled = true;
          result.stopped = true;
        }
      }
      if (remaining > 0) sleep_unless_stopped(options);
    }
  }

  void sleep_unless_stopped(const LaunchOptions& options) const {
    using namespace std::chrono;
    const auto until = steady_clock::now() + options_.poll_interval;
    while (steady_clock::now() < until) {
      if (options.stop_requested != nullptr && options.stop_requested->load()) return;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  SlurmLauncherOptions options_;
};

}  // namespace

std::unique_ptr<Launcher> make_slurm_launcher(SlurmLauncherOptions options) {
  return std::make_unique<SlurmLauncher>(std::move(options));
}

}  // namespace gradsweep::experiment

// The Slurm launcher's pieces that need no cluster: quoting, the batch script (including running it under
// bash with a stand-in srun, hostile values everywhere), grouping by shape, parsing Slurm's output, and
// deciding a task's outcome.
#include "experiment/slurm/batch_script.hpp"
#include "experiment/slurm/resource_shape.hpp"
#include "experiment/slurm/shell_quote.hpp"
#include "experiment/slurm/slurm_commands.hpp"
#include "experiment/slurm/task_outcome.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace gradsweep::experiment::slurm {
namespace {
namespace fs = std::filesystem;
using test::read_text;
using test::run_command;
using test::write_text;

// Payloads that would leave a file behind if any reached bash as code.
const std::vector<std::string> kHostile = {"'; touch INJECTED1 #", "$(touch INJECTED2)", "`touch INJECTED3`",
                                           "\"; touch INJECTED4; \"", "a'b\"c$HOME\\d!e"};

std::string echo_through_bash(const std::string& value) {
  return run_command("printf '%s' " + shell_quote(value)).output;
}

TEST(ShellQuote, EveryValueComesBackUnchanged) {
  for (const std::string& v : kHostile) EXPECT_EQ(echo_through_bash(v), v) << v;
  EXPECT_EQ(shell_quote("'; rm -rf / #"), "''\\''; rm -rf / #'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(echo_through_bash(""), "");
  EXPECT_EQ(shell_join({"a b", "c'd"}), "'a b' 'c'\\''d'");
}

TEST(ShellQuote, SlurmTimesAreValidated) {
  for (const char* ok : {"30", "30:00", "01:30:00", "2-00", "2-12:00", "1-00:00:00", "UNLIMITED"})
    EXPECT_NO_THROW(check_slurm_time(ok, "time")) << ok;
  for (const char* bad : {"", "1h", "01:30:00; rm -rf /", "$(touch x)", "1:2:3:4", "-1", "1-", "1:", "1-2-3"})
    EXPECT_THROW(check_slurm_time(bad, "time"), std::invalid_argument) << bad;
  try {
    check_slurm_time("1\n#SBATCH", "launcher.slurm.time");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("launcher.slurm.time"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1\\n#SBATCH"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_plain_token("ab c", "cell id"), std::invalid_argument);
  EXPECT_THROW(check_single_line("a\nb", "x"), std::invalid_argument);
}

// An array of two cells whose every path and free-form value is hostile.
BatchArray hostile_array(const fs::path& root) {
  BatchArray a;
  a.name = "n1x2";
  a.nodes = 1;
  a.ranks_per_node = 2;
  a.time_limit = "00:10:00";
  a.settings.partition = "debug";
  a.settings.constraint = "$(touch INJECTED5)&`touch INJECTED6`";
  a.settings.extra = {"--comment='; touch INJECTED7 #", "--mail-type=END"};
  a.settings.max_concurrent = 1;
  a.gradsweep_binary = root / "bin $(touch INJECTED8)" / "grad'sweep";
  a.script_dir = root / "out '; touch INJECTED9 #" / "slurm";
  for (int i = 0; i < 2; ++i)
    a.tasks.push_back({"cell" + std::to_string(i), "0123456789abcdef",
                       root / "out '; touch INJECTED9 #" / "cells" / (kHostile[static_cast<std::size_t>(i)] + "x")});
  return a;
}

std::vector<fs::path> injected_files(const fs::path& root) {
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().rfind("INJECTED", 0) == 0) found.push_back(e.path());
  for (const auto& e : fs::directory_iterator(fs::current_path()))
    if (e.path().filename().string().rfind("INJECTED", 0) == 0) found.push_back(e.path());
  return found;
}

TEST(BatchScript, HeaderHoldsTheShapeAndQuotedValues) {
  const fs::path root = test::scratch_dir();
  const std::string script = batch_script_text(hostile_array(root));
  for (const char* line : {"#SBATCH --array=0-1%1\n", "#SBATCH --nodes=1\n", "#SBATCH --ntasks-per-node=2\n",
                           "#SBATCH --time=00:10:00\n", "#SBATCH --partition=debug\n", "#SBATCH --requeue\n",
                           "#SBATCH --constraint=\"$(touch INJECTED5)&`touch INJECTED6`\"\n",
                           "#SBATCH --comment=\"'; touch INJECTED7 #\"\n", "#SBATCH --mail-type=\"END\"\n"})
    EXPECT_NE(script.find(line), std::string::npos) << "missing " << line << " in\n" << script;
  EXPECT_EQ(script.find("--gpus-per-node"), std::string::npos);
  EXPECT_EQ(script.find("--account"), std::string::npos);
  EXPECT_NE(
      script.find("#SBATCH --output=\"" + (root / "out '; touch INJECTED9 #" / "slurm").string() + "/n1x2-%A_%a.out\""),
      std::string::npos)
      << script;
  EXPECT_NE(script.find("gradsweep='" + root.string() + "/bin $(touch INJECTED8)/grad'\\''sweep'\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("\nthreads=0\n"), std::string::npos);
  BatchArray threaded = hostile_array(root);
  threaded.threads_per_rank = 4;
  EXPECT_NE(batch_script_text(threaded).find("\nthreads=4\n"), std::string::npos);
  EXPECT_NE(task_command_line(threaded, "/c").find("'--set' 'runtime.threads=4'"), std::string::npos);
  EXPECT_EQ(array_range(5, 0), "0-4");
  EXPECT_EQ(array_range(5, 2), "0-4%2");
}

TEST(BatchScript, RefusesValuesThatCannotBeWrittenSafely) {
  const fs::path root = test::scratch_dir();
  auto refused = [&](auto change, const std::string& key) {
    BatchArray a = hostile_array(root);
    change(a);
    try {
      batch_script_text(a);
      ADD_FAILURE() << "accepted a bad " << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused([](BatchArray& a) { a.settings.partition = "debug; rm -rf /"; }, "launcher.slurm.partition");
  refused([](BatchArray& a) { a.settings.account = "$(touch x)"; }, "launcher.slurm.account");
  refused([](BatchArray& a) { a.settings.qos = "normal\n#SBATCH --x"; }, "launcher.slurm.qos");
  refused([](BatchArray& a) { a.time_limit = "'; rm -rf / #"; }, "time limit");
  refused([](BatchArray& a) { a.settings.constraint = "a\ntouch INJECTED"; }, "launcher.slurm.constraint");
  refused([](BatchArray& a) { a.settings.constraint = "a\"b"; }, "launcher.slurm.constraint");
  refused([](BatchArray& a) { a.settings.extra = {"--comment=x\ntouch INJECTED"}; }, "launcher.slurm.extra");
  refused([](BatchArray& a) { a.settings.extra = {"touch INJECTED"}; }, "launcher.slurm.extra");
  refused([](BatchArray& a) { a.settings.extra = {"--a b=c"}; }, "launcher.slurm.extra");
  refused([](BatchArray& a) { a.tasks[0].cell_id = "../x"; }, "cell id");
  refused([](BatchArray& a) { a.tasks[0].config_hash = "\"x\""; }, "config hash");
  refused([](BatchArray& a) { a.tasks[0].cell_dir = "/tmp/a\nb"; }, "cell directory");
  refused([](BatchArray& a) { a.script_dir = "/tmp/100%"; }, "output directory");
  refused([](BatchArray& a) { a.nodes = 0; }, "nodes");
  refused([](BatchArray& a) { a.tasks.clear(); }, "no cells");
}

// The script as Slurm would run it, with a stand-in srun that records its arguments and writes the
// summary.json a successful `gradsweep train` writes.
TEST(BatchScript, RunsUnderBashWithHostileValuesAndRunsNothingElse) {
  const fs::path root = test::scratch_dir();
  const BatchArray a = hostile_array(root);
  const fs::path script = write_batch_array(a);
  for (const ArrayTask& t : a.tasks) fs::create_directories(t.cell_dir);
  EXPECT_EQ(run_command("bash -n " + shell_quote(script.string())).exit_code, 0);
  const fs::path bin = root / "fake-bin";
  write_text(bin / "srun",
             "#!/bin/bash\nprintf '%s\\n' \"$@\" > \"$SRUN_ARGS\"\n"
             "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n"
             "echo '{\"status\": \"ok\"}' > \"$out/summary.json\"\n");
  fs::permissions(bin / "srun", fs::perms::owner_all);
  for (int task = 0; task < 2; ++task) {
    const ArrayTask& t = a.tasks[static_cast<std::size_t>(task)];
    const fs::path args = root / ("srun-args-" + std::to_string(task));
    const test::CommandResult r =
        run_command("cd " + shell_quote(root.string()) + " && PATH=" + shell_quote(bin.string()) + ":$PATH SRUN_ARGS=" +
                    shell_quote(args.string()) + " SLURM_ARRAY_JOB_ID=42 SLURM_ARRAY_TASK_ID=" + std::to_string(task) +
                    // Task 1 as if sbatch had --cpus-per-task=3: its ranks get 3 threads.
                    (task == 1 ? " SLURM_CPUS_PER_TASK=3" : "") + " bash " + shell_quote(script.string()) + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string expected = "--mpi=pmix\n--kill-on-bad-exit=1\n" + a.gradsweep_binary.string() + "\ntrain\n" +
                                 (t.cell_dir / "cell.yaml").string() + "\n--out\n" + t.cell_dir.string() + "\n" +
                                 (task == 1 ? "--set\nruntime.threads=3\n" : "");
    EXPECT_EQ(read_text(args), expected);
    const runs::CellStatus status = runs::read_cell_status(t.cell_dir);
    EXPECT_EQ(status.state, runs::CellState::Ok) << read_text(t.cell_dir / "status.json");
    EXPECT_EQ(status.job, "42_" + std::to_string(task));
    EXPECT_EQ(status.config_hash, "0123456789abcdef");
    EXPECT_EQ(status.launcher, "slurm");
    EXPECT_NE(read_text(t.cell_dir / "launcher.log").find("slurm job 42_" + std::to_string(task)), std::string::npos);
  }
  EXPECT_TRUE(injected_files(root).empty()) << injected_files(root).front();
  EXPECT_EQ(read_text(a.cells_file()), cells_file_text(a));
}

TEST(BatchScript, AFailingSrunMarksTheCellFailedWithItsExitCode) {
  const fs::path root = test::scratch_dir();
  BatchArray a = hostile_array(root);
  const fs::path script = write_batch_array(a);
  fs::create_directories(a.tasks[0].cell_dir);
  write_text(root / "bin" / "srun", "#!/bin/bash\nexit 3\n");
  fs::permissions(root / "bin" / "srun", fs::perms::owner_all);
  const test::CommandResult r =
      run_command("PATH=" + shell_quote((root / "bin").string()) +
                  ":$PATH SLURM_ARRAY_JOB_ID=7 SLURM_ARRAY_TASK_ID=0 bash " + shell_quote(script.string()) + " 2>&1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const runs::CellStatus status = runs::read_cell_status(a.tasks[0].cell_dir);
  EXPECT_EQ(status.state, runs::CellState::Failed);
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_NE(status.reason.find("code 3"), std::string::npos) << status.reason;
}

// launcher.slurm.setup: its lines run in the task's shell before srun, so what they set up (a module, a
// virtual environment) is the ranks' environment.
TEST(BatchScript, SetupLinesRunBeforeSrunInTheSameShell) {
  const fs::path root = test::scratch_dir();
  BatchArray a = hostile_array(root);
  a.settings.setup = {"export GRADSWEEP_TEST_SETUP='from setup'", "setup_ran() { :; }"};
  const fs::path script = write_batch_array(a);
  const std::string text = read_text(script);
  ASSERT_NE(text.find("\nexport GRADSWEEP_TEST_SETUP='from setup'\nsetup_ran() { :; }\n"), std::string::npos) << text;
  EXPECT_LT(text.find("export GRADSWEEP_TEST_SETUP"), text.find("srun --mpi=pmix"));
  fs::create_directories(a.tasks[0].cell_dir);
  const fs::path bin = root / "fake-bin";
  write_text(bin / "srun", "#!/bin/bash\nprintf '%s' \"$GRADSWEEP_TEST_SETUP\" > \"$SRUN_SAW\"\nexit 0\n");
  fs::permissions(bin / "srun", fs::perms::owner_all);
  const fs::path saw = root / "srun-saw";
  const test::CommandResult r =
      run_command("PATH=" + shell_quote(bin.string()) + ":$PATH SRUN_SAW=" + shell_quote(saw.string()) +
                  " SLURM_ARRAY_JOB_ID=9 SLURM_ARRAY_TASK_ID=0 bash " + shell_quote(script.string()) + " 2>&1");
  EXPECT_EQ(read_text(saw), "from setup") << r.output;
}

runs::PlannedCell cell(const std::string& id, int nodes, int ranks, const std::string& time = "") {
  runs::PlannedCell c;
  c.id = id;
  c.nodes = nodes;
  c.ranks_per_node = ranks;
  c.time_limit = time;
  return c;
}

TEST(ResourceShape, CellsWithTheSameResourcesShareOneArray) {
  std::vector<runs::PlannedCell> cells = {cell("a", 1, 1), cell("b", 1, 2), cell("c", 1, 1),
                                          cell("d", 2, 2, "01:00:00"), cell("e", 1, 2)};
  cells.push_back(cell("f", 1, 1));
  cells.back().slurm.partition = "gpu";  // same shape name, different sbatch options: its own array
  cells.push_back(cell("g", 1, 1));
  cells.back().gpus_per_node = 4;
  cells.push_back(cell("h", 1, 1));
  cells.back().slurm.setup = {"module load cuda"};  // another environment on the node: its own array
  const std::vector<ShapeGroup> groups = group_by_shape(cells);
  ASSERT_EQ(groups.size(), 6u);
  auto ids = [](const ShapeGroup& g) {
    std::string s;
    for (const runs::PlannedCell* c : g.cells) s += c->id;
    return s;
  };
  EXPECT_EQ(groups[0].name, "n1x1");
  EXPECT_EQ(ids(groups[0]), "ac");
  EXPECT_EQ(groups[1].name, "n1x2");
  EXPECT_EQ(ids(groups[1]), "be");
  EXPECT_EQ(groups[2].name, "n2x2-t01h00m00s");
  EXPECT_EQ(groups[3].name, "n1x1-2");
  EXPECT_EQ(ids(groups[3]), "f");
  EXPECT_EQ(groups[4].name, "n1x1-g4");
  EXPECT_EQ(ids(groups[5]), "h");
  for (const ShapeGroup& g : groups) EXPECT_NO_THROW(check_plain_token(g.name, "name"));
}

TEST(SlurmCommands, ParsesSqueueSacctAndScontrol) {
  const auto q = parse_squeue("12_0|RUNNING|None\n12_1|PENDING|JobArrayTaskLimit\n13|COMPLETED|None\n");
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].job, "12_0");
  EXPECT_EQ(q[0].array_job, "12");
  EXPECT_EQ(q[0].task, 0);
  EXPECT_EQ(q[0].reason, "");
  EXPECT_EQ(q[1].reason, "JobArrayTaskLimit");
  EXPECT_EQ(q[2].task, -1);
  const auto s = parse_sacct("12_0|COMPLETED|0:0|None\n12_1|CANCELLED by 0|0:15|None\n12_2|TIMEOUT|0:0|TimeLimit\n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].state, "CANCELLED");
  EXPECT_EQ(s[1].reason, "by 0");
  EXPECT_EQ(s[1].exit_code, "0:15");
  EXPECT_EQ(s[2].reason, "TimeLimit");
  const auto c = parse_scontrol(
      "JobId=14 ArrayJobId=12 ArrayTaskId=1 JobName=x JobState=CANCELLED Reason=None ExitCode=0:15 Requeue=1\n"
      "JobId=12 ArrayJobId=12 ArrayTaskId=2 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:1\n");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].job, "12_1");
  EXPECT_EQ(c[0].state, "CANCELLED");
  EXPECT_EQ(c[0].exit_code, "0:15");
  EXPECT_EQ(c[1].job, "12_2");
  EXPECT_EQ(c[1].reason, "TimeLimit");
}

TEST(SlurmCommands, MissingToolsAreClearErrors) {
  try {
    require_slurm_tool("sbatch-that-does-not-exist");
    FAIL();
  } catch (const SlurmError& e) {
    EXPECT_NE(std::string(e.what()).find("not found on PATH"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--launcher local"), std::string::npos) << e.what();
  }
  const ProgramOutput r = run_program({"sh", "-c", "echo out; echo err >&2; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(TaskOutcome, ScriptStatusFirstThenSlurmState) {
  const fs::path dir = test::scratch_dir();
  runs::CellStatus written;
  written.job = "5_1";
  written.state = runs::CellState::Ok;
  EXPECT_EQ(task_outcome(dir, "h", "5_1", written, std::nullopt).state, runs::CellState::Ok);
  // A status left by an earlier job of the same cell does not count.
  EXPECT_EQ(task_outcome(dir, "h", "9_0", written, std::nullopt).state, runs::CellState::Failed);

  write_text(dir / "rank-0.log", "[info] step 1\n[error] out of memory in step 3\n");
  written.state = runs::CellState::Failed;
  written.exit_code = 2;
  const runs::CellStatus failed = task_outcome(dir, "h", "5_1", written, std::nullopt);
  EXPECT_EQ(failed.state, runs::CellState::Failed);
  EXPECT_NE(failed.reason.find("code 2"), std::string::npos) << failed.reason;
  EXPECT_NE(failed.reason.find("out of memory"), std::string::npos) << failed.reason;

  TaskState slurm;
  // The script saw srun die and wrote "failed", but Slurm cancelled the task: interrupted, not failed.
  slurm.job = "5_1";
  slurm.state = "CANCELLED";
  EXPECT_EQ(task_outcome(dir, "h", "5_1", written, slurm).state, runs::CellState::Interrupted);
  slurm.state = "FAILED";
  EXPECT_EQ(task_outcome(dir, "h", "5_1", written, slurm).state, runs::CellState::Failed);

  written.state = runs::CellState::Running;
  slurm.job = "5_1";
  slurm.state = "CANCELLED";
  slurm.reason = "by 0";
  const runs::CellStatus cancelled = task_outcome(dir, "h", "5_1", written, slurm);
  EXPECT_EQ(cancelled.state, runs::CellState::Interrupted);
  EXPECT_NE(cancelled.reason.find("CANCELLED"), std::string::npos) << cancelled.reason;
  slurm.state = "TIMEOUT";
  EXPECT_EQ(task_outcome(dir, "h", "5_1", written, slurm).state, runs::CellState::Timeout);
  slurm.state = "NODE_FAIL";
  const runs::CellStatus node_fail = task_outcome(dir, "h", "5_1", written, slurm);
  EXPECT_EQ(node_fail.state, runs::CellState::Failed);
  EXPECT_NE(node_fail.reason.find("NODE_FAIL"), std::string::npos);
  EXPECT_NE(node_fail.reason.find("out of memory"), std::string::npos);
  // Without a rank log error, the rank's own words in launcher.log beat srun's "Exited with exit code 2".
  const fs::path dir2 = dir / "no-rank-error";
  write_text(dir2 / "launcher.log",
             "=== gradsweep: slurm job 5_2\nerror: configuration error:\n  cell.yaml: train.seq_len: too long\n"
             "srun: error: vm: task 0: Exited with exit code 2\n");
  written.job = "5_2";
  written.state = runs::CellState::Failed;
  const runs::CellStatus config_error = task_outcome(dir2, "h", "5_2", written, std::nullopt);
  EXPECT_NE(config_error.reason.find("error: configuration error: cell.yaml: train.seq_len: too long"),
            std::string::npos)
      << config_error.reason;
  EXPECT_TRUE(is_active_state("PENDING"));
  EXPECT_FALSE(is_active_state("COMPLETED"));
}

}  // namespace
}  // namespace gradsweep::experiment::slurm

// An elastic cell under Slurm without a cluster: the array asks for a range of nodes, its script records the
// nodes each run was given (through the real `gradsweep cell-provenance`, with stand-ins for srun and
// scontrol), and a run on fewer nodes than the one before it is a change of size with the nodes it lost.
#include "experiment/slurm/batch_script.hpp"
#include "experiment/slurm/elastic_runs.hpp"
#include "experiment/slurm/resource_shape.hpp"
#include "experiment/slurm/shell_quote.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gradsweep::experiment::slurm {
namespace {
namespace fs = std::filesystem;
using test::read_text;

// A cell of 3 nodes x 2 ranks that may go on with 2.
BatchArray elastic_array(const fs::path& root, int min_nodes = 2) {
  BatchArray a;
  a.name = "n3x2-e2";
  a.nodes = 3;
  a.min_nodes = min_nodes;
  a.ranks_per_node = 2;
  a.gradsweep_binary = test::gradsweep_binary();
  a.script_dir = root / "out" / "slurm";
  a.tasks.push_back({"cell0", "0123456789abcdef", root / "out" / "cells" / "cell0"});
  return a;
}

TEST(SlurmElastic, TheArrayAsksForARangeOfNodesAndCpusNotAFixedTaskCount) {
  const fs::path root = test::scratch_dir();
  const std::string script = batch_script_text(elastic_array(root));
  EXPECT_NE(script.find("#SBATCH --nodes=2-3\n#SBATCH --mincpus=2\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("#SBATCH --ntasks-per-node"), std::string::npos) << script;
  EXPECT_NE(script.find("\nmin_nodes=2\n"), std::string::npos);
  BatchArray threads = elastic_array(root);
  threads.settings.cpus_per_task = 4;
  EXPECT_NE(batch_script_text(threads).find("#SBATCH --mincpus=8\n#SBATCH --cpus-per-task=4\n"), std::string::npos);
  EXPECT_NE(task_command_line(threads, "/c").find("--nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=2 "),
            std::string::npos);
  // min_nodes equal to the nodes leaves nothing to shrink to: a fixed array.
  for (const int fixed : {0, 3}) {
    const BatchArray a = elastic_array(root, fixed);
    const std::string text = batch_script_text(a);
    EXPECT_NE(text.find("#SBATCH --nodes=3\n#SBATCH --ntasks-per-node=2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\nmin_nodes=0\n"), std::string::npos);
    EXPECT_EQ(task_command_line(a, "/c").find("SLURM_JOB_NUM_NODES"), std::string::npos);
  }
  try {
    batch_script_text(elastic_array(root, 4));
    ADD_FAILURE() << "accepted min_nodes 4 of 3";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("launcher.elastic.min_nodes"), std::string::npos) << e.what();
  }
}

TEST(SlurmElastic, ElasticCellsGetAnArrayOfTheirOwn) {
  std::vector<runs::PlannedCell> cells(3);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    cells[i].id = "c" + std::to_string(i);
    cells[i].nodes = 3;
    cells[i].ranks_per_node = 1;
  }
  cells[1].elastic_min_nodes = 2;
  cells[2].elastic_min_nodes = 3;  // cannot shrink: the fixed shape
  const std::vector<ShapeGroup> groups = group_by_shape(cells);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].name, "n3x1");
  EXPECT_EQ(groups[1].name, "n3x1-e2");
  EXPECT_EQ(groups[2].name, "n3x1-2");
}

// One run of the array's task under bash: scontrol says which nodes Slurm gave it, srun records its arguments
// and writes the summary a finished `gradsweep train` writes; cell-provenance is the real one.
std::string run_task(const BatchArray& a, const std::vector<std::string>& nodes, int restart) {
  const fs::path bin = a.script_dir.parent_path().parent_path() / "fake-bin";
  std::string hostnames;
  for (const std::string& n : nodes) hostnames += n + "\\n";
  test::write_text(bin / "scontrol", "#!/bin/bash\n[ \"$1 $2\" = 'show hostnames' ] && printf '" + hostnames + "'\n");
  test::write_text(bin / "srun",
                   "#!/bin/bash\nprintf '%s\\n' \"$@\" > \"$SRUN_ARGS\"\n"
                   "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n"
                   "echo '{\"status\": \"ok\", \"world_size\": 4}' > \"$out/summary.json\"\n");
  for (const char* tool : {"scontrol", "srun"}) fs::permissions(bin / tool, fs::perms::owner_all);
  const fs::path args = bin / "srun-args";
  const test::CommandResult r =
      test::run_command("PATH=" + shell_quote(bin.string()) + ":$PATH SRUN_ARGS=" + shell_quote(args.string()) +
                        " SLURM_ARRAY_JOB_ID=42 SLURM_ARRAY_TASK_ID=0 SLURM_RESTART_COUNT=" + std::to_string(restart) +
                        " SLURM_JOB_NODELIST=ignored SLURM_JOB_NUM_NODES=" + std::to_string(nodes.size()) + " bash " +
                        shell_quote(a.script_file().string()) + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_text(args);
}

TEST(SlurmElastic, ARunOnFewerNodesThanTheOneBeforeIsAChangeOfSizeNamingTheNodeLost) {
  const fs::path root = test::scratch_dir();
  const BatchArray a = elastic_array(root);
  write_batch_array(a);
  const fs::path cell = a.tasks[0].cell_dir;
  fs::create_directories(cell);

  // The first run got all three nodes: srun starts 2 ranks on each, nothing changed size.
  std::string srun = run_task(a, {"n0", "n1", "n2"}, 0);
  EXPECT_NE(srun.find("--nodes=3\n--ntasks-per-node=2\n"), std::string::npos) << srun;
  nlohmann::json elastic = recorded_elastic(cell);
  ASSERT_TRUE(elastic.is_object()) << read_text(cell / "provenance.json");
  EXPECT_EQ(elastic["node_list"], nlohmann::json({"n0", "n1", "n2"}));
  EXPECT_TRUE(recorded_resizes(cell).empty()) << elastic.dump();

  // Requeued after n1 failed, on the two left.
  srun = run_task(a, {"n0", "n2"}, 1);
  EXPECT_NE(srun.find("--nodes=2\n--ntasks-per-node=2\n"), std::string::npos) << srun;
  const std::vector<runs::CellResize> resizes = recorded_resizes(cell);
  ASSERT_EQ(resizes.size(), 1u) << read_text(cell / "provenance.json");
  EXPECT_EQ(resizes[0].from_nodes, 3);
  EXPECT_EQ(resizes[0].to_nodes, 2);
  EXPECT_EQ(resizes[0].lost_nodes, std::vector<int>{1});
  EXPECT_NE(resizes[0].why.find("slurm job 42_0 (restart 1) was given 2 of 3 nodes (--nodes=2-3); not n1"),
            std::string::npos)
      << resizes[0].why;
  // The run's end put the record in provenance.json (with its end) and in summary.json, without the changes.
  const nlohmann::json provenance = nlohmann::json::parse(read_text(cell / "provenance.json"));
  EXPECT_NE(provenance.value("end", ""), "");
  EXPECT_EQ(provenance["elastic"].value("resized", ""), "3->2 nodes");
  const nlohmann::json summary = nlohmann::json::parse(read_text(cell / "summary.json"));
  EXPECT_EQ(summary["elastic"],
            nlohmann::json({{"min_nodes", 2}, {"planned_nodes", 3}, {"nodes", 2}, {"resized", "3->2 nodes"}}))
      << summary.dump();
}

TEST(SlurmElastic, AFirstRunOnFewerNodesThanPlannedIsAChangeFromThePlan) {
  ElasticRun run{2, 3, "7_1", 0, {"a", "b"}};
  const nlohmann::json first = elastic_record_after(nullptr, run);
  const std::vector<runs::CellResize> resizes = runs::resizes_from_json(first["resizes"]);
  ASSERT_EQ(resizes.size(), 1u);
  EXPECT_EQ(resizes[0].from_nodes, 3);
  EXPECT_TRUE(resizes[0].lost_nodes.empty());  // no run before it had other nodes
  // Back to three: another change; the same nodes again: none.
  run.nodes = {"a", "b", "c"};
  const nlohmann::json grown = elastic_record_after(first, run);
  EXPECT_EQ(grown.value("resized", ""), "3->2->3 nodes");
  EXPECT_EQ(elastic_record_after(grown, run)["resizes"].size(), 2u);
}

TEST(SlurmElastic, BadArgumentsAreRefusedByName) {
  for (const char* bad : {"", "2", "0/3", "4/3", "2/x", "2/3/4", "-1/3"})
    EXPECT_THROW(parse_elastic_range(bad), std::invalid_argument) << bad;
  EXPECT_EQ(parse_elastic_range("2/3"), std::make_pair(2, 3));
  for (const char* bad : {"", "a,,b", "a,"}) EXPECT_THROW(parse_node_list(bad), std::invalid_argument) << bad;
  EXPECT_EQ(parse_node_list("a,b"), (std::vector<std::string>{"a", "b"}));
  const test::CommandResult r =
      test::run_command(test::gradsweep_binary().string() + " cell-provenance " + test::scratch_dir().string() +
                        " --start --elastic 5/3 --nodes a 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--elastic '5/3'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gradsweep::experiment::slurm

// Which communicator a job gets: runtime.comm, GRADSWEEP_COMM, the device, the build and the launcher
// (docs/configuration.md, docs/communicators.md). The rule itself, the key's validation, and the CLI on
// this machine: no GPU, Open MPI installed, NCCL built in or not.
#include "comm/nccl/nccl_backend.hpp"
#include "config/cell_config.hpp"
#include "config/comm_choice.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;
using config::CommRequest;

CommRequest request(const std::string& choice, const std::string& device, bool nccl, bool launcher,
                    const std::string& env = "") {
  CommRequest r;
  r.config_choice = choice;
  r.config_file = "cell.yaml";
  r.env_choice = env;
  r.device = device;
  r.nccl_built = nccl;
  r.launched_by_mpi = launcher;
  return r;
}

std::string chosen(const CommRequest& r) { return config::choose_comm(r).backend; }

std::string refusal(const CommRequest& r) {
  try {
    config::choose_comm(r);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CommChoice, AutoFollowsDeviceBuildAndLauncher) {
  EXPECT_EQ(chosen(request("auto", "cpu", false, false)), "local");
  EXPECT_EQ(chosen(request("auto", "cpu", true, false)), "local");
  EXPECT_EQ(chosen(request("auto", "cpu", true, true)), "mpi");
  EXPECT_EQ(chosen(request("auto", "cuda", false, true)), "mpi");
  EXPECT_EQ(chosen(request("auto", "cuda", false, false)), "local");
  EXPECT_EQ(chosen(request("auto", "cuda", true, true)), "nccl");
  EXPECT_EQ(chosen(request("auto", "cuda:1", true, false)), "nccl");  // one rank, no launcher
}

TEST(CommChoice, ExplicitChoiceAndEnvironmentOverride) {
  EXPECT_EQ(chosen(request("mpi", "cpu", false, false)), "mpi");
  EXPECT_EQ(chosen(request("local", "cpu", false, true)), "local");
  EXPECT_EQ(chosen(request("mpi", "cpu", false, false, "local")), "local");
  EXPECT_EQ(chosen(request("local", "cuda", true, true, "nccl")), "nccl");
  EXPECT_EQ(chosen(request("mpi", "cpu", false, false, "auto")), "mpi");  // auto defers to the file
  EXPECT_NE(config::choose_comm(request("local", "cpu", false, true, "mpi")).why.find("GRADSWEEP_COMM=mpi"),
            std::string::npos);
}

TEST(CommChoice, RefusesWhatCannotRun) {
  EXPECT_NE(refusal(request("auto", "cpu", false, false, "gloo"))
                .find("GRADSWEEP_COMM='gloo': expected auto, local, mpi or nccl"),
            std::string::npos);
  const std::string unbuilt = refusal(request("nccl", "cuda", false, false));
  EXPECT_NE(unbuilt.find("cell.yaml: runtime.comm: nccl: this gradsweep was built without the NCCL backend"),
            std::string::npos)
      << unbuilt;
  const std::string cpu = refusal(request("nccl", "cpu", true, false));
  EXPECT_NE(cpu.find("the NCCL backend moves CUDA tensors, but runtime.device is 'cpu'"), std::string::npos) << cpu;
  EXPECT_NE(refusal(request("auto", "cpu", true, false, "nccl")).find("GRADSWEEP_COMM=nccl: "), std::string::npos);
}

const char* kMinimalCell =
    "model: {name: gpt2}\ndata: {train: a.bin, val: b.bin}\ntrain: {steps: 1, batch_size: 1, seq_len: 8}\n";

TEST(CommChoice, ConfigKeyDefaultsToAutoAndValidates) {
  EXPECT_EQ(config::parse_cell_config(kMinimalCell, "cell.yaml", {}).comm, "auto");
  for (const char* ok : {"local", "mpi", "nccl"})
    EXPECT_EQ(
        config::parse_cell_config(std::string(kMinimalCell) + "runtime: {comm: " + ok + "}\n", "cell.yaml", {}).comm,
        ok);
  try {
    config::parse_cell_config(std::string(kMinimalCell) + "runtime:\n  comm: gloo\n", "cell.yaml", {});
    FAIL() << "runtime.comm: gloo was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cell.yaml:5:9: runtime.comm: 'gloo' is not one of auto, local, mpi, nccl"),
              std::string::npos)
        << e.what();
  }
}

// ---- the CLI -------------------------------------------------------------------------------------

// A 2-step cell on the byte corpus; `runtime` is the runtime section's YAML flow mapping.
fs::path cell(const fs::path& dir, const std::string& runtime) {
  const fs::path corpus = test::byte_corpus();
  test::write_text(dir / "cell.yaml",
                   "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
                   "data: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\ntrain: {steps: 2, batch_size: 2, seq_len: 16}\neval: {batches: 1}\n"
                       "metrics: {peak_flops: 1e10}\nruntime: " +
                       runtime + "\n");
  return dir / "cell.yaml";
}

// Runs `gradsweep train` as a user would from a plain shell: no launcher variables, no GRADSWEEP_COMM
// unless `env` sets it. Open MPI refuses root unless told; harmless otherwise.
test::CommandResult train(const fs::path& config, const fs::path& out, const std::string& env = "") {
  return test::run_command(
      "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_SIZE -u GRADSWEEP_COMM "
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
      env + " " + test::gradsweep_binary().string() + " train " + config.string() + " --out " + out.string());
}

bool machine_has_gpu() { return test::run_command("nvidia-smi -L >/dev/null 2>&1").exit_code == 0; }

TEST(CommChoiceCli, NcclWithoutGpuOrBuildIsAClearError) {
  if (comm::nccl_built() && machine_has_gpu()) GTEST_SKIP() << "this machine has a GPU: nccl would run";
  const fs::path dir = test::scratch_dir();
  const auto r = train(cell(dir, "{device: cuda, comm: nccl}"), dir / "o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string expected = comm::nccl_built()
                                   ? "the NCCL backend needs a CUDA device; this machine has none (cudaGetDeviceCount: "
                                   : "runtime.comm: nccl: this gradsweep was built without the NCCL backend";
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
}

TEST(CommChoiceCli, BadValueNamesFileLineAndChoices) {
  const fs::path dir = test::scratch_dir();
  const auto r = train(cell(dir, "{comm: gloo}"), dir / "o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cell.yaml:6:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("runtime.comm: 'gloo' is not one of auto, local, mpi, nccl"), std::string::npos) << r.output;
  const auto e = train(cell(dir, "{threads: 1}"), dir / "o", "GRADSWEEP_COMM=gloo");
  EXPECT_EQ(e.exit_code, 2) << e.output;
  EXPECT_NE(e.output.find("GRADSWEEP_COMM='gloo': expected auto, local, mpi or nccl"), std::string::npos) << e.output;
}

TEST(CommChoiceCli, MpiWithoutLauncherRunsAsSingleton) {
  const fs::path dir = test::scratch_dir();
  const auto r = train(cell(dir, "{threads: 1, comm: mpi}"), dir / "o");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("communicator: mpi, rank 0 of 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MPI runs as a singleton"), std::string::npos) << r.output;
  EXPECT_NE(test::read_text(dir / "o" / "summary.json").find("\"comm_backend\": \"mpi\""), std::string::npos);
}

TEST(CommChoiceCli, AutoIsLocalWithoutLauncherAndMpiUnderOne) {
  const fs::path dir = test::scratch_dir();
  const auto alone = train(cell(dir, "{threads: 1}"), dir / "alone");
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("communicator chosen by "), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("runtime.comm: auto"), std::string::npos) << alone.output;
  EXPECT_NE(alone.output.find("communicator: local (one rank)"), std::string::npos) << alone.output;

  const auto launched = test::run_command(
      "env -u GRADSWEEP_COMM OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 120 mpirun "
      "--oversubscribe --bind-to none -np 1 " +
      test::gradsweep_binary().string() + " train " + cell(dir, "{threads: 1}").string() + " --out " +
      (dir / "launched").string());
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  EXPECT_NE(launched.output.find("started by an MPI launcher"), std::string::npos) << launched.output;
  EXPECT_NE(launched.output.find("communicator: mpi, rank 0 of 1"), std::string::npos) << launched.output;

  // The environment overrides the file.
  const auto forced = train(cell(dir, "{threads: 1, comm: mpi}"), dir / "forced", "GRADSWEEP_COMM=local");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(forced.output.find("communicator: local (one rank)"), std::string::npos) << forced.output;
}

}  // namespace
}  // namespace gradsweep

// LibTorch's CUDA half is loaded at start where a GPU may be used, and only there (host/device/torch_cuda.hpp):
// nothing gradsweep ships links it, GRADSWEEP_TORCH_CUDA decides when set, the machine's driver when not,
// and a load really registers LibTorch's CUDA hooks.
#include "device/torch_cuda.hpp"
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

std::string version(const std::string& env) {
  return test::run_command(env + " " + test::gradsweep_command("--version")).output;
}

// The binary and every built plugin: a target that links `torch` instead of gradsweep_torch brings
// libtorch_cuda.so back into every process, and fails this.
TEST(TorchCuda, NothingBuiltLinksIt) {
  std::vector<fs::path> files{test::gradsweep_binary()};
  for (const auto& e : fs::directory_iterator(test::plugin_dir()))
    if (e.path().extension() == ".so") files.push_back(e.path());
  ASSERT_GT(files.size(), 10u);
  for (const fs::path& f : files) {
    const auto r = test::run_command("ldd " + f.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("libtorch_cpu.so"), std::string::npos) << f << ": " << r.output;
    EXPECT_EQ(r.output.find("libtorch_cuda.so"), std::string::npos) << f << " links LibTorch's CUDA half";
  }
}

TEST(TorchCuda, TheVariableDecidesAndTheDriverWhenUnset) {
  EXPECT_NE(version("GRADSWEEP_TORCH_CUDA=0").find("LibTorch CUDA not loaded: GRADSWEEP_TORCH_CUDA=0"),
            std::string::npos);
  const std::string unset = version("env -u GRADSWEEP_TORCH_CUDA");
  if (device::has_nvidia_driver())
    EXPECT_NE(unset.find("LibTorch CUDA loaded (CUDA runtime "), std::string::npos) << unset;
  else
    EXPECT_NE(unset.find("LibTorch CUDA not loaded: no NVIDIA driver (/dev/nvidiactl)"), std::string::npos) << unset;
  const auto bad = test::run_command("GRADSWEEP_TORCH_CUDA=maybe " + test::gradsweep_command("--version"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("error: GRADSWEEP_TORCH_CUDA='maybe': expected 0 or 1"), std::string::npos) << bad.output;
}

#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
// A build with NCCL stands on a LibTorch with CUDA (CI's): loading it, even without a GPU, registers the
// CUDA hooks (the CUDA runtime's version comes from them), and a CPU run trains as before beside it.
TEST(TorchCuda, ALoadRegistersLibTorchsCudaHooksAndCpuTrainingGoesOn) {
  const std::string forced = version("GRADSWEEP_TORCH_CUDA=1");
  EXPECT_NE(forced.find("LibTorch CUDA loaded (CUDA runtime 1"), std::string::npos) << forced;
  const fs::path dir = test::scratch_dir();
  const fs::path cell = test::write_tiny_cell(dir, 3);
  const auto r =
      test::run_command("GRADSWEEP_TORCH_CUDA=1 " +
                        test::gradsweep_command("train " + cell.string() + " --out " + (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "summary.json")) << r.output;
}
#endif

// A cell that asks for a GPU where there is none says what this process found.
TEST(TorchCuda, ACudaCellWithoutAGpuSaysWhy) {
  if (device::has_nvidia_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  const fs::path dir = test::scratch_dir();
  const fs::path cell = test::write_tiny_cell(dir, 2);
  const auto r = test::run_command(
      test::gradsweep_command("train " + cell.string() + " --set runtime.device=cuda --set runtime.comm=local --out " +
                              (dir / "out").string()));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("has no CUDA device (LibTorch CUDA not loaded: no NVIDIA driver"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace gradsweep

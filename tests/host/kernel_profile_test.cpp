// The kernel profile (metrics.kernel_profile): kernel and operator names sorted into classes, nested
// operators charged their self time, and a real `gradsweep train` run on the CPU whose profile finds the
// GEMMs, attention, elementwise work and optimizer of GPT-2 inside the step's time.
#include "tiny_cell.hpp"
#include "train/kernel_profile.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;
using train::classify_kernel;
using train::KernelClass;
using train::KernelRecord;

TEST(KernelClasses, CudaKernelNamesAsCublasFlashAndLibTorchNameThem) {
  EXPECT_EQ(classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"),
            KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn>"),
            KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>"),
            KernelClass::Attention);
  EXPECT_EQ(classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3"),
            KernelClass::Attention);
  EXPECT_EQ(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"),
            KernelClass::ElementwiseNorm);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"),
            KernelClass::ElementwiseNorm);
  EXPECT_EQ(classify_kernel("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>"),
            KernelClass::Optimizer);
  EXPECT_EQ(classify_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            KernelClass::Communication);
  EXPECT_EQ(classify_kernel("void at::native::indexing_backward_kernel<float>"), KernelClass::Other);
  EXPECT_EQ(classify_kernel("Memcpy DtoD (Device -> Device)"), KernelClass::Other);
}

TEST(KernelClasses, CpuOperatorsByTheirStem) {
  EXPECT_EQ(classify_kernel("aten::addmm"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("aten::mm"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("aten::_scaled_dot_product_flash_attention_for_cpu"), KernelClass::Attention);
  EXPECT_EQ(classify_kernel("aten::native_layer_norm_backward"), KernelClass::ElementwiseNorm);
  EXPECT_EQ(classify_kernel("aten::add_.Tensor"), KernelClass::ElementwiseNorm);
  EXPECT_EQ(classify_kernel("aten::_log_softmax"), KernelClass::ElementwiseNorm);
  EXPECT_EQ(classify_kernel("aten::_fused_adamw_"), KernelClass::Optimizer);
  EXPECT_EQ(classify_kernel("aten::_foreach_norm"), KernelClass::Optimizer) << "the clip's norm, not a LayerNorm";
  EXPECT_EQ(classify_kernel("aten::embedding_dense_backward"), KernelClass::Other);
}

// linear [0,10) encloses addmm [1,7), which encloses fill_ [2,3); a second thread's mm overlaps them and
// is its own lane.
TEST(KernelSummary, NestedOperatorsAreChargedTheirSelfTime) {
  const std::vector<KernelRecord> records = {{"aten::linear", 1, 0, 10'000'000},
                                             {"aten::addmm", 1, 1'000'000, 7'000'000},
                                             {"aten::fill_", 1, 2'000'000, 3'000'000},
                                             {"aten::mm", 2, 0, 4'000'000},
                                             {"aten::embedding", 1, 10'000'000, 12'000'000}};
  const train::KernelProfile p = train::summarize_kernels(records, "cpu operators", 2, 0.02);
  const auto ms = [&](KernelClass k) { return p.seconds[static_cast<std::size_t>(k)] * 1e3; };
  // Per step (2 steps): linear's self 4 ms + addmm's 5 ms + mm's 4 ms = 13 ms of GEMM, halved.
  EXPECT_NEAR(ms(KernelClass::Gemm), 6.5, 1e-9);
  EXPECT_NEAR(ms(KernelClass::ElementwiseNorm), 0.5, 1e-9);
  EXPECT_NEAR(ms(KernelClass::Other), 1.0, 1e-9);
  EXPECT_NEAR(p.busy_seconds() * 1e3, 8.0, 1e-9) << "16 ms of lanes' time over 2 steps";
  ASSERT_FALSE(p.top.empty());
  EXPECT_EQ(p.top.front().name, "aten::addmm");
  EXPECT_DOUBLE_EQ(p.top.front().calls, 0.5);
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j["steps"], 2);
  EXPECT_NEAR(j["seconds"]["gemm"].get<double>(), 0.0065, 1e-12);
}

struct ProfiledRun {
  CommandResult result;
  nlohmann::json profile, summary;
};

ProfiledRun train_profiled(const std::string& extra, int steps) {
  const fs::path dir = scratch_dir("-" + std::to_string(steps));
  const fs::path cell = write_tiny_cell(dir, steps, extra);
  ProfiledRun run;
  run.result = run_command(gradsweep_command("train " + cell.string() + " --out " + (dir / "out").string()));
  if (fs::exists(dir / "out" / "kernel-profile.json"))
    run.profile = nlohmann::json::parse(read_text(dir / "out" / "kernel-profile.json"));
  if (fs::exists(dir / "out" / "summary.json"))
    run.summary = nlohmann::json::parse(read_text(dir / "out" / "summary.json"));
  return run;
}

TEST(KernelProfileRun, SplitsGpt2sCpuStepIntoItsClasses) {
  const ProfiledRun run = train_profiled("metrics: {kernel_profile: 3}\n", 6);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_TRUE(run.profile.is_object()) << "no kernel-profile.json";
  EXPECT_EQ(run.summary["kernel_profile"], run.profile);
  EXPECT_EQ(run.profile["source"], "cpu operators");
  EXPECT_EQ(run.profile["steps"], 3);
  for (const char* kind : {"gemm", "attention", "elementwise_norm", "optimizer"})
    EXPECT_GT(run.profile["seconds"][kind].get<double>(), 0.0) << kind;
  const double busy = run.profile["busy_seconds"], step = run.profile["step_seconds"];
  // One training thread: its operators' self times fit inside the step, and make most of it.
  EXPECT_LE(busy, step * 1.02);
  EXPECT_GT(busy, step * 0.3);
  EXPECT_GT(run.profile["seconds"]["gemm"].get<double>(), run.profile["seconds"]["optimizer"].get<double>());
  EXPECT_NE(run.result.output.find("kernel profile (cpu operators, 3 steps)"), std::string::npos) << run.result.output;
}

TEST(KernelProfileRun, ProfilingEveryStepIsRefusedNamingTheKey) {
  const ProfiledRun run = train_profiled("metrics: {kernel_profile: 4}\n", 4);
  EXPECT_EQ(run.result.exit_code, 2) << run.result.output;
  EXPECT_NE(run.result.output.find("metrics.kernel_profile"), std::string::npos) << run.result.output;
  EXPECT_NE(run.result.output.find("below train.steps (4)"), std::string::npos) << run.result.output;
  EXPECT_NE(run.result.output.find("cell.yaml:"), std::string::npos) << run.result.output;
}

}  // namespace
}  // namespace gradsweep::test

// The projection (docs/projection.md): the step model against a hand calculation, the alpha-beta fit
// recovering its parameters and keeping residuals, the traffic-shape fit, Kendall's tau, a projection asked
// without its measurements, a tiny real sweep (single on 1 rank, ring on 2) whose report gets the
// projection's columns and charts, and one that shows which one-rank cells may lend ring their compute.
#include "experiment_test_support.hpp"

#include "analysis/link_fit.hpp"
#include "analysis/projection.hpp"
#include "analysis/step_model.hpp"
#include "analysis/sweep_measurements.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;
using namespace analysis;

const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";

TEST(StepModel, SyntheticCaseMatchesTheHandCalculation) {
  LinkModel link;
  link.alpha_s = 10e-6, link.beta_bytes_per_s = 1e9;
  StepInputs in;
  in.ranks = 4, in.computing_ranks = 4, in.compute_1_s = 2.0, in.backward_1_s = 1.2, in.update_1_s = 0.05;
  in.fixed_s = 0.01, in.bytes = 3e6, in.calls = 5, in.overlap = 0.5, in.tokens_per_step = 2048;
  const StepPrediction s = predict_step(in, link);
  // By hand: compute 2.0 / 4 = 0.5; comm 5 calls x 2(4-1) hops x 10 us + 3e6 B / 1e9 B/s = 0.0003 + 0.003 =
  // 0.0033; hidden min(0.5 x 0.0033, 1.2 / 4) = 0.00165; step 0.5 + 0.00165 + 0.05 + 0.01 = 0.56165.
  EXPECT_NEAR(s.compute_s, 0.5, 1e-12);
  EXPECT_NEAR(s.comm_s, 0.0033, 1e-12);
  EXPECT_NEAR(s.exposed_comm_s, 0.00165, 1e-12);
  EXPECT_NEAR(s.step_s, 0.56165, 1e-12);
  EXPECT_NEAR(s.tokens_per_s, 2048 / 0.56165, 1e-9);

  // A server that only serves (3 ranks, 2 compute), 3 single-threaded ranks on 2 cores (contention 1.5), all
  // communication overlappable but more of it than the backward: compute 1.5 x 2.0 / 2 = 1.5; comm
  // 2 x 2(3-1) x 10 us + 4e8 / 1e9 = 0.40008; hidden = backward 1.5 x 1.2 / 2 = 0.9 would exceed it, so
  // all 0.40008 is hidden; update 1.5 x 0.05 = 0.075; step 1.5 + 0 + 0.075 + 0.01 = 1.585.
  in.ranks = 3, in.computing_ranks = 2, in.contention = 1.5, in.bytes = 4e8, in.calls = 2, in.overlap = 1;
  const StepPrediction t = predict_step(in, link);
  EXPECT_NEAR(t.comm_s, 0.40008, 1e-12);
  EXPECT_NEAR(t.exposed_comm_s, 0.0, 1e-12);
  EXPECT_NEAR(t.step_s, 1.585, 1e-12);
  // Without overlap the whole communication is exposed.
  in.overlap = 0;
  EXPECT_NEAR(predict_step(in, link).step_s, 1.585 + 0.40008, 1e-12);
}

std::vector<LinkPoint> synthetic_points(double alpha, double beta) {
  std::vector<LinkPoint> points;
  for (int ranks : {2, 4})
    for (double bytes = 4096; bytes <= 16 << 20; bytes *= 4)
      points.push_back({ranks, bytes, 2.0 * (ranks - 1) * alpha + 2.0 * (ranks - 1) / ranks * bytes / beta, 0});
  return points;
}

TEST(LinkFit, RecoversAlphaAndBetaAndKeepsTheResiduals) {
  const LinkModel fit = fit_link(synthetic_points(20e-6, 2e9));
  EXPECT_NEAR(fit.alpha_s, 20e-6, 1e-12);
  EXPECT_NEAR(fit.beta_bytes_per_s / 2e9, 1.0, 1e-9);
  EXPECT_LT(fit.rms_residual_s(), 1e-12);

  // One point off by 1 ms: the fit moves a little, and the stored residuals say where it misses.
  auto noisy = synthetic_points(20e-6, 2e9);
  noisy[3].seconds += 1e-3;
  const LinkModel rough = fit_link(noisy);
  EXPECT_GT(rough.points[3].residual(), 5e-4);
  const nlohmann::json j = to_json(rough);
  ASSERT_EQ(j["points"].size(), noisy.size());
  EXPECT_NEAR(j["points"][3]["residual_s"].get<double>(), rough.points[3].residual(), 1e-15);
  EXPECT_GT(j["rms_residual_s"].get<double>(), 1e-4);
  const LinkModel back = link_from_json(j);
  EXPECT_DOUBLE_EQ(back.alpha_s, rough.alpha_s);
  EXPECT_NEAR(back.points[3].residual(), rough.points[3].residual(), 1e-15);

  EXPECT_THROW(fit_link({{2, 4096, 1e-3, 0}}), std::invalid_argument);  // one size determines no line
}

TEST(LinkFit, ReadsTheJsonOfBenchComm) {
  const fs::path dir = test::scratch_dir();
  // The shape `gradsweep bench comm --json` writes (bench_comm_command.cpp).
  nlohmann::json bench{{"collective", "allreduce"}, {"ranks", 4}, {"results", nlohmann::json::array()}};
  for (const auto& p : synthetic_points(5e-6, 1e9))
    if (p.ranks == 4) bench["results"].push_back({{"bytes", p.bytes}, {"ring", {{"time_us", p.seconds * 1e6}}}});
  test::write_text(dir / "bench.json", bench.dump());
  const LinkModel fit = fit_link(read_bench_points(dir / "bench.json", "ring"));
  EXPECT_NEAR(fit.alpha_s, 5e-6, 1e-11);
  EXPECT_NEAR(fit.beta_bytes_per_s / 1e9, 1.0, 1e-6);
  try {
    read_bench_points(dir / "bench.json", "native");
    FAIL() << "no native timings in the file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--algorithms native"), std::string::npos) << e.what();
  }
}

TEST(LinkFit, LinkGivenAsRateAndLatency) {
  const LinkModel l = parse_link_text("10Gbit@20us");
  EXPECT_DOUBLE_EQ(l.beta_bytes_per_s, 1.25e9);
  EXPECT_DOUBLE_EQ(l.alpha_s, 20e-6);
  EXPECT_DOUBLE_EQ(parse_link_text("2GB/s").beta_bytes_per_s, 2e9);
  try {
    parse_link_text("10parsecs");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'10parsecs'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("10Gbit"), std::string::npos) << e.what();
  }
}

TEST(TrafficFit, TellsARingsShapeFromAServers) {
  std::vector<double> f, g, ring, star;
  for (int p : {2, 4, 8}) {
    f.push_back((p - 1.0) / p), g.push_back(p - 1.0);
    ring.push_back(6e6 * (p - 1.0) / p), star.push_back(3e6 * (p - 1.0));
  }
  const auto [a, b] = nonnegative_fit(f, g, ring);
  EXPECT_NEAR(a, 6e6, 1e-3);
  EXPECT_NEAR(b, 0, 1e-6);
  const auto [c, d] = nonnegative_fit(f, g, star);
  EXPECT_NEAR(c, 0, 1e-6);
  EXPECT_NEAR(d, 3e6, 1e-3);
}

TEST(KendallTau, AgreementAndReversal) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3}, {1, 3, 2}), 1.0 / 3);  // 2 concordant, 1 discordant of 3 pairs
}

std::string two_cells() {
  return test::tiny_experiment(
      "name: proj\nlauncher: {threads: 1}\n"
      "include:\n  - {strategy: single, ranks_per_node: 1}\n  - {strategy: ring, ranks_per_node: 2}\n",
      6);
}

std::vector<std::string> csv_row(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, ',');) out.push_back(field);
  return out;
}

TEST(ProjectionCommand, NamesTheMissingMeasurementsAndTheCommandsThatMakeThem) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "proj.yaml", two_cells());
  // Nothing ran yet: no one-rank compute, no traffic, no link.
  const auto r = test::run_command(
      test::gradsweep("project " + (dir / "proj.yaml").string() + " --out " + (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing measurements"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compute on one rank of"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("`gradsweep run " + (dir / "proj.yaml").string() + " --out " + (dir / "out").string() + "`"),
            std::string::npos)
      << r.output;
  // A directory that holds no sweep.
  const auto d = test::run_command(test::gradsweep("project " + dir.string()));
  EXPECT_EQ(d.exit_code, 2) << d.output;
  EXPECT_NE(d.output.find("no plan.json"), std::string::npos) << d.output;
}

TEST(ProjectionRun, ReportGetsPredictedColumnsAndChartsAfterARealSweep) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "proj.yaml", two_cells());
  const fs::path out = dir / "out";
  const auto run = test::run_command(std::string(kRootEnv) + "timeout -k 5 240 " +
                                     test::gradsweep("run " + (dir / "proj.yaml").string() + " --out " + out.string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // Measured, but no link yet: the projection says which link and how to measure it.
  const auto without = test::run_command(test::gradsweep("project " + out.string()));
  EXPECT_EQ(without.exit_code, 2) << without.output;
  EXPECT_NE(without.output.find("intra-node link: `mpirun -np 2 gradsweep bench comm"), std::string::npos)
      << without.output;
  const auto no_fit = test::run_command(test::gradsweep("report " + out.string()));
  ASSERT_EQ(no_fit.exit_code, 0) << no_fit.output;
  EXPECT_NE(test::read_text(out / "report.md").find("No projection"), std::string::npos);
  EXPECT_EQ(test::read_text(out / "results.csv").find("projection_error"), std::string::npos);

  const auto with = test::run_command(
      test::gradsweep("project " + out.string() + " --links intra=1GB/s@10us,inter=100Mbit@50us --nodes 1,2,4,64"));
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_TRUE(fs::exists(out / "link_fit.json"));
  std::ifstream pj(out / "projection.json");
  const auto projection = nlohmann::json::parse(pj);
  ASSERT_EQ(projection["cells"].size(), 2u);
  ASSERT_EQ(projection["lines"].size(), 2u);
  for (const auto& line : projection["lines"]) {
    if (line["label"] == "strategy=ring") {
      // Projected to the node counts asked, 2 ranks per node as measured: 128 ranks at 64 nodes.
      ASSERT_EQ(line["curve"].size(), 4u) << line.dump();
      EXPECT_EQ(line["curve"][3]["ranks"].get<int>(), 128);
      EXPECT_GT(line["curve"][3]["comm_s"].get<double>(), line["curve"][1]["comm_s"].get<double>());
    } else {
      // single ran on one rank only: its traffic on more is unknown, said without failing.
      EXPECT_EQ(line["curve"].size(), 1u) << line.dump();
      ASSERT_EQ(projection["not_projected"].size(), 1u) << projection.dump();
      EXPECT_NE(projection["not_projected"][0].get<std::string>().find("traffic of strategy=single"),
                std::string::npos);
    }
  }

  const auto report = test::run_command(test::gradsweep("report " + out.string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::ifstream csv(out / "results.csv");
  std::string header, line;
  std::getline(csv, header);
  const auto columns = csv_row(header);
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  };
  ASSERT_LT(column("predicted_tokens_per_s"), columns.size()) << header;
  ASSERT_LT(column("projection_error"), columns.size()) << header;
  int rows = 0;
  while (std::getline(csv, line)) {
    const auto row = csv_row(line);
    ASSERT_GT(row.size(), column("projection_error")) << line;
    const double predicted = std::stod(row[column("predicted_tokens_per_s")]);
    const double measured = std::stod(row[column("tokens_per_sec")]);
    const double error = std::stod(row[column("projection_error")]);
    EXPECT_GT(predicted, 0);
    EXPECT_NEAR(error, predicted / measured - 1, 1e-4) << line;
    // The one-rank cell is predicted from its own breakdown, whose parts add up to its step (results.md).
    if (row[column("strategy")] == "single") {
      EXPECT_LT(std::fabs(error), 0.05) << line;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 2);
  const std::string md = test::read_text(out / "report.md");
  EXPECT_NE(md.find("## Projection"), std::string::npos);
  EXPECT_NE(md.find("Median absolute error"), std::string::npos);
  for (const char* plot : {"projection.png", "predicted_vs_measured.png", "overlap.png"})
    EXPECT_TRUE(fs::exists(out / "plots" / plot)) << plot;
}

// ring has no one-rank cell: its compute comes from the one-rank cells of the same model, but not from one
// whose strategy trained a sampled softmax (summary.json's restricts_vocabulary), which computes less.
TEST(ProjectionRun, ARestrictedVocabularyLendsNoComputeToADenseStrategy) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "proj.yaml", test::tiny_experiment("name: proj3\nlauncher: {threads: 1}\ninclude:\n"
                                                            "  - {strategy: single, ranks_per_node: 1}\n"
                                                            "  - {strategy: {name: sampled, negatives: 16}, "
                                                            "ranks_per_node: 1}\n"
                                                            "  - {strategy: ring, ranks_per_node: 2}\n",
                                                            4));
  const fs::path out = dir / "out";
  const auto run = test::run_command(std::string(kRootEnv) + "timeout -k 5 240 " +
                                     test::gradsweep("run " + (dir / "proj.yaml").string() + " --out " + out.string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::string> id_of;  // strategy name -> cell id
  for (const auto& entry : fs::directory_iterator(out / "cells")) {
    std::ifstream in(entry.path() / "summary.json");
    const auto summary = nlohmann::json::parse(in);
    const std::string strategy = summary["strategy"];
    id_of[strategy] = entry.path().filename().string();
    EXPECT_EQ(summary["restricts_vocabulary"].get<bool>(), strategy == "sampled") << strategy;
  }
  ASSERT_EQ(id_of.size(), 3u);

  const auto projected = test::run_command(test::gradsweep("project " + out.string() + " --links intra=1GB/s@10us"));
  ASSERT_EQ(projected.exit_code, 0) << projected.output;
  std::ifstream pj(out / "projection.json");
  const auto projection = nlohmann::json::parse(pj);
  bool ring_seen = false;
  for (const auto& line : projection["lines"]) {
    if (line["label"].get<std::string>().find("ring") == std::string::npos) continue;
    ring_seen = true;
    const std::string source = line["compute_source"];
    EXPECT_NE(source.find(id_of["single"]), std::string::npos) << source;
    EXPECT_EQ(source.find(id_of["sampled"]), std::string::npos) << source;
  }
  EXPECT_TRUE(ring_seen) << projection.dump();
}

}  // namespace
}  // namespace gradsweep

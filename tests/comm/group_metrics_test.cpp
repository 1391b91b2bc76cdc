// A group's traffic in metrics.jsonl and summary.json: comm.groups.<name>.{bytes_sent, bytes_received,
// seconds, calls}, per step and as means over the measured steps.
#include "support/test_support.hpp"
#include "train/metrics_log.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

train::StepRecord step(std::int64_t n, comm::GroupStats groups) {
  train::StepRecord r{};
  r.step = n;
  r.result.applied = true;
  r.groups = std::move(groups);
  return r;
}

comm::CommStats stats(std::uint64_t bytes, std::uint64_t calls, double seconds) {
  comm::CommStats s;
  s.bytes_sent = bytes;
  s.bytes_received = 2 * bytes;
  s.calls = calls;
  s.seconds = seconds;
  return s;
}

TEST(GroupMetrics, EachStepsLineHasItsGroupsAndTheTotalsAverageThem) {
  const auto dir = test::scratch_dir();
  train::MetricsLog log(dir / "metrics.jsonl", true, 0);
  const auto line = log.write(step(0, {{"node", stats(1000, 2, 0.5)}, {"across_nodes", stats(10, 1, 0.25)}}));
  EXPECT_EQ(line["comm"]["groups"]["node"]["bytes_sent"], 1000);
  EXPECT_EQ(line["comm"]["groups"]["node"]["bytes_received"], 2000);
  EXPECT_EQ(line["comm"]["groups"]["node"]["calls"], 2);
  EXPECT_DOUBLE_EQ(line["comm"]["groups"]["across_nodes"]["seconds"].get<double>(), 0.25);
  EXPECT_FALSE(log.write(step(1, {}))["comm"].contains("groups"));

  train::RunTotals totals;
  totals.add(step(0, {{"node", stats(1000, 2, 0.5)}}), false);
  totals.add(step(1, {{"node", stats(3000, 4, 1.5)}, {"split(1)", stats(400, 2, 1.0)}}), false);
  EXPECT_DOUBLE_EQ(totals.groups.at("node").bytes_sent, 2000.0);
  EXPECT_DOUBLE_EQ(totals.groups.at("node").bytes_received, 4000.0);
  EXPECT_DOUBLE_EQ(totals.groups.at("node").calls, 3.0);
  EXPECT_DOUBLE_EQ(totals.groups.at("node").seconds, 1.0);
  EXPECT_DOUBLE_EQ(totals.groups.at("split(1)").bytes_sent, 200.0);  // absent from the first step: zero there
}

}  // namespace
}  // namespace gradsweep

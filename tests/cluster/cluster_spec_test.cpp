// The cluster's spec without touching the machine: link rates, names, validation, the state file's round trip.
#include "cluster/bandwidth.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/mpi_access.hpp"
#include "cluster/subnet_choice.hpp"
#include "cluster/time_dilation.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <thread>
#include <string>

namespace gradsweep::cluster {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Bandwidth, ParsesBitsPerSecondInSiUnits) {
  EXPECT_EQ(parse_bandwidth("1Gbit", "k"), 1000000000u);
  EXPECT_EQ(parse_bandwidth("200mbit", "k"), 200000000u);
  EXPECT_EQ(parse_bandwidth("10GBIT", "k"), 10000000000u);
  EXPECT_EQ(parse_bandwidth("2.5gbit", "k"), 2500000000u);
  EXPECT_EQ(parse_bandwidth("64kbit", "k"), 64000u);
}

TEST(Bandwidth, RefusesWhatDoesNotParseNamingTheKey) {
  EXPECT_NE(error_of([] {
              parse_bandwidth("fast", "--link-bandwidth");
            }).find("--link-bandwidth: 'fast' does not start with a number"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_bandwidth("1G", "k"); }).find("unknown unit 'G'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_bandwidth("100", "k"); }).find("has no unit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_bandwidth("1.2.3mbit", "k"); }).find("malformed number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_bandwidth("0mbit", "k"); }).find("below 1kbit"), std::string::npos);
  // Bytes per second are refused, not converted: tc's own "mbps" means megabytes.
  for (const char* bytes : {"100mbps", "1GB/s", "125MB", "1gbyte"})
    EXPECT_NE(error_of([bytes] { parse_bandwidth(bytes, "k"); }).find("bytes per second"), std::string::npos) << bytes;
}

TEST(Bandwidth, FormatsBackToWhatParses) {
  EXPECT_EQ(format_bandwidth(1000000000), "1Gbit");
  EXPECT_EQ(format_bandwidth(2500000000u), "2.5Gbit");
  EXPECT_EQ(format_bandwidth(200000000), "200Mbit");
  for (std::uint64_t b : {64000ull, 123456789ull, 10000000000ull})
    EXPECT_NEAR(static_cast<double>(parse_bandwidth(format_bandwidth(b), "k")), static_cast<double>(b), b * 1e-5);
}

ClusterSpec two_nodes() {
  ClusterSpec s;
  s.name = "t1";
  s.nodes = 2;
  s.ranks_per_node = 2;
  s.link_bits_per_second = 1000000000;
  s.subnet_index = 7;
  return s;
}

TEST(ClusterSpec, NamesEverythingWithThePrefixAndFitsInterfaceNames) {
  ClusterSpec s = two_nodes();
  s.name = "abcdefg";  // the longest name
  s.nodes = kMaxNodes;
  validate(s);
  for (const std::string& link : {s.bridge_name(), s.veth_name(kMaxNodes - 1), s.peer_name(kMaxNodes - 1)}) {
    EXPECT_LE(link.size(), 15u) << link;
    EXPECT_EQ(link.rfind("gsc-abcdefg-", 0), 0u) << link;
  }
  EXPECT_EQ(s.node_name(3), "gsc-abcdefg-n3");
  EXPECT_EQ(s.subnet(), "10.213.7.0/24");
  EXPECT_EQ(s.node_address(0), "10.213.7.1");
  EXPECT_EQ(s.bridge_address(), "10.213.7.254");
}

TEST(ClusterSpec, RefusesBadInputNamingTheOption) {
  auto with = [](auto change) {
    ClusterSpec s = two_nodes();
    change(s);
    return error_of([&s] { validate(s); });
  };
  EXPECT_NE(with([](ClusterSpec& s) { s.nodes = 0; }).find("--nodes: 0"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.nodes = kMaxNodes + 1; }).find("--nodes"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.ranks_per_node = 0; }).find("--ranks-per-node"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.name = "toolongname"; }).find("--name: 'toolongname'"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.name = "a-b"; }).find("--name"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.name = "Big"; }).find("--name"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) { s.dilation = 0.5; }).find("--dilation"), std::string::npos);
  EXPECT_NE(with([](ClusterSpec& s) {
              s.link_bits_per_second = 10000;
              s.dilation = 4;
            }).find("below 8kbit"),
            std::string::npos);
}

TEST(ClusterSpec, DilationDividesTheShapedRateAndIsKeptInTheState) {
  ClusterSpec s = two_nodes();
  s.dilation = 2.5;
  EXPECT_EQ(s.shaped_bits_per_second(), 400000000u);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["dilation"].get<double>(), 2.5);
  EXPECT_EQ(j["shaped_bits_per_second"].get<std::uint64_t>(), 400000000u);
  EXPECT_EQ(j["link_bandwidth"].get<std::string>(), "1Gbit");
  const ClusterSpec back = spec_from_json(j);
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.nodes, 2);
  EXPECT_EQ(back.ranks_per_node, 2);
  EXPECT_EQ(back.subnet_index, 7);
  EXPECT_EQ(back.dilation, 2.5);
}

TEST(TimeDilation, ParsesAFactorOrAuto) {
  EXPECT_EQ(parse_dilation("1"), 1.0);
  EXPECT_EQ(parse_dilation("3.5"), 3.5);
  EXPECT_EQ(parse_dilation("auto"), 0.0);
  for (const char* bad : {"0.9", "x", "2x", "-1", "nan"})
    EXPECT_NE(error_of([bad] { parse_dilation(bad); }).find("--dilation"), std::string::npos) << bad;
}

TEST(TimeDilation, MeasuresTheSlowdownOfCoLocatedNodes) {
  // One node against itself: 1 but for noise, which on a loaded 2-core machine reached 1.9 (the test runs
  // beside builds). 8 workers on <= 4 cores: 2x at least on an idle machine; other load L shrinks the ratio
  // towards (L + 8) / (L + 1), 1.6 at a load of 10.
  const double one = measure_dilation(1, 1);
  EXPECT_GE(one, 1.0);
  EXPECT_LT(one, 3.0);
  const double f = measure_dilation(8, 1);
  EXPECT_GE(f, 1.0);
  if (std::thread::hardware_concurrency() <= 4) {
    EXPECT_GT(f, 1.3) << "8 workers on " << std::thread::hardware_concurrency() << " cores";
  }
}

TEST(SubnetChoice, SkipsClustersAddressesAndRoutesThatOverlap) {
  const std::string here =
      "2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\n"
      "default via 192.0.2.1 dev eth0\n192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2\n";
  EXPECT_EQ(choose_subnet({}, here), 1);
  EXPECT_EQ(choose_subnet({1, 2}, here), 3);
  EXPECT_EQ(choose_subnet({1}, here + "10.213.2.0/24 dev gsc-x-br proto kernel scope link src 10.213.2.254\n"), 3);
  EXPECT_EQ(choose_subnet({}, here + "10.213.0.0/23 via 192.0.2.9 dev eth0\n"), 2);  // covers .0 and .1
  EXPECT_EQ(choose_subnet({}, here + "10.0.0.0/8 via 192.0.2.9 dev eth0\n"), -1);    // real 10.x hosts: keep off
  EXPECT_EQ(choose_subnet({}, here + "10.213.1.77 dev eth0\n"), 2);                  // a host route
}

TEST(MpiAccess, ArgumentsKeepMpiOnTheClusterSubnet) {
  const ClusterSpec s = two_nodes();
  const std::vector<std::string> args = mpirun_arguments(s);
  const std::string line = [&] {
    std::string l;
    for (const std::string& a : args) l += a + " ";
    return l;
  }();
  EXPECT_NE(line.find("--hostfile /run/gradsweep/clusters/t1/hostfile"), std::string::npos) << line;
  EXPECT_NE(line.find("--mca plm_rsh_agent /run/gradsweep/clusters/t1/rsh-agent"), std::string::npos) << line;
  EXPECT_NE(line.find("--mca btl tcp,self,vader"), std::string::npos) << line;
  EXPECT_NE(line.find("--mca btl_tcp_if_include 10.213.7.0/24"), std::string::npos) << line;
  EXPECT_NE(line.find("--mca oob_tcp_if_include 10.213.7.0/24"), std::string::npos) << line;
  EXPECT_EQ(mpirun_environment(s).at("OMPI_MCA_btl_tcp_if_include"), "10.213.7.0/24");
}

}  // namespace
}  // namespace gradsweep::cluster

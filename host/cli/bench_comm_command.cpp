// `gradsweep bench comm`: times allreduce, reduce_scatter or allgather over a range of sizes with each
// algorithm of the MPI backend, and reports nccl-tests' algbw and busbw (NVIDIA/nccl-tests,
// doc/PERFORMANCE.md) so that the figures compare with theirs and with a link's peak.
//
// Fairness: iterations alternate the algorithms (and which goes first), so a burst of load from another
// process hits both alike; every timed call starts after a barrier, so it measures the collective and
// not the ranks' arrival skew; t is the slowest rank's mean, as nccl-tests reports.
//
// `hierarchical` runs by default when the job spans more than one node (or GRADSWEEP_RANKS_PER_NODE makes
// "nodes" on one machine); its intra-node phases (reduce-scatter + all-gather) and its inter-node
// allreduce are also timed apart, each with its own busbw: 2(L-1)/L x S over the intra time for L ranks
// per node, 2(N-1)/N x S/L over the inter time for N nodes (each local rank's shard is S/L).
//
// Each algorithm runs through the communicator stack, as a strategy's calls do; `NAME-bare` runs it on the
// MPI backend itself, so that `--algorithms native,native-bare` shows what the stack's layers cost per call.
#include "cli/bench_comm_command.hpp"

#include "comm/algorithms/ring.hpp"
#include "comm/registry/backend_registry.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "env/environment.hpp"
#include "services/logging.hpp"
#include "device/machine.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsweep::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string collective = "allreduce";
  std::string min_bytes = "1KiB";
  std::string max_bytes = "256MiB";
  int iters = 20;
  int warmup = 5;
  std::vector<std::string> algorithms{"native", "ring"};
  std::string dtype = "float32";
  std::string json;
  int threads = 0;
};

enum class Collective { Allreduce, ReduceScatter, Allgather };

// "64KiB", "16M", "1048576": bytes, with binary multiples (K = KiB = 1024, as nccl-tests reads them).
std::uint64_t parse_bytes(const std::string& text) {
  std::size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0) throw std::invalid_argument("'" + text + "': expected a size such as 4096, 64KiB or 256MiB");
  std::string unit = text.substr(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::pair<const char*, std::uint64_t> units[] = {{"", 1},
                                                         {"B", 1},
                                                         {"K", 1ull << 10},
                                                         {"KB", 1ull << 10},
                                                         {"KIB", 1ull << 10},
                                                         {"M", 1ull << 20},
                                                         {"MB", 1ull << 20},
                                                         {"MIB", 1ull << 20},
                                                         {"G", 1ull << 30},
                                                         {"GB", 1ull << 30},
                                                         {"GIB", 1ull << 30}};
  for (const auto& [name, scale] : units)
    if (unit == name) return value * scale;
  throw std::invalid_argument("'" + text + "': unknown unit '" + text.substr(end) + "' (use B, KiB, MiB or GiB)");
}

std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// "ring-bare" -> {"ring", true}: the algorithm on the MPI backend itself, under none of the communicator
// stack's layers (checks, watchdog, flight recorder, counting), so that an algorithm and its bare twin
// timed side by side show what the layers cost per call.
std::pair<std::string, bool> parse_algorithm(const std::string& name) {
  constexpr std::string_view kBare = "-bare";
  if (name.size() > kBare.size() && name.compare(name.size() - kBare.size(), kBare.size(), kBare) == 0)
    return {name.substr(0, name.size() - kBare.size()), true};
  return {name, false};
}

// nccl-tests' busbw factor: what each rank must move for the collective, relative to S.
double bus_factor(Collective c, int n) {
  if (n <= 1) return 0.0;
  return c == Collective::Allreduce ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

// Element i of rank r's data (i counted from `first` in the collective's full tensor): small integers
// that are exact in bfloat16 once summed over up to 8 ranks. Built from a 13-element period by
// repetition, so it costs one tensor of the size, not an index tensor of int64.
torch::Tensor pattern(std::int64_t count, std::int64_t first, torch::ScalarType dtype) {
  const torch::Tensor period = (torch::arange(13, torch::kInt) + 1).to(dtype);
  const std::int64_t reps = (count + first % 13) / 13 + 1;
  return period.repeat({reps}).narrow(0, first % 13, count).contiguous();
}

// The tensors of one size: for allreduce `a` is the tensor; for reduce_scatter `a` is the input and `b`
// the output; for allgather `a` is the input and `b` the output. S is nccl-tests' size.
struct Case {
  Collective collective;
  torch::Tensor a{}, b{};     // filled by make_case; {} keeps `Case k{c}` free of -Wmissing-field-initializers
  std::int64_t per_rank = 0;  // reduce_scatter's output, allgather's input; allreduce: the whole count
  std::uint64_t bytes = 0;    // S
};

Case make_case(Collective c, std::uint64_t bytes, torch::ScalarType dtype, int n) {
  const std::int64_t element = static_cast<std::int64_t>(c10::elementSize(dtype));
  const std::int64_t count = static_cast<std::int64_t>(bytes) / element;
  Case k{c};
  const auto options = torch::TensorOptions().dtype(dtype);
  if (c == Collective::Allreduce) {
    k.per_rank = count;
    k.a = torch::zeros({count}, options);
  } else {
    k.per_rank = count / n;  // S rounded down to a multiple of n elements, as nccl-tests does
    k.a = torch::zeros({c == Collective::ReduceScatter ? k.per_rank * n : k.per_rank}, options);
    k.b = torch::zeros({c == Collective::ReduceScatter ? k.per_rank : k.per_rank * n}, options);
  }
  k.bytes = static_cast<std::uint64_t>((c == Collective::Allreduce ? count : k.per_rank * n) * element);
  return k;
}

sdk::Status run_once(sdk::Communicator& comm, Case& k) {
  switch (k.collective) {
    case Collective::Allreduce: return comm.allreduce(k.a, sdk::ReduceOp::Sum);
    case Collective::ReduceScatter: return comm.reduce_scatter(k.a, k.b, sdk::ReduceOp::Sum);
    case Collective::Allgather: return comm.allgather(k.a, k.b);
  }
  return sdk::Status::Error("unknown collective");
}

// Runs the collective once on known data and compares with the result computed locally. Returns "" or
// what is wrong. The timed iterations then run on zeros (nothing grows, no denormals).
std::string check_once(sdk::Communicator& comm, Case& k, const std::string& algorithm) {
  const int n = comm.size(), r = comm.rank();
  const torch::ScalarType dtype = k.a.scalar_type();
  const double ranks_sum = n * (n + 1) / 2.0;
  torch::Tensor got, want;
  switch (k.collective) {
    case Collective::Allreduce:
      k.a.copy_(pattern(k.per_rank, 0, dtype).mul_(r + 1));
      want = pattern(k.per_rank, 0, dtype).mul_(ranks_sum);
      got = k.a;
      break;
    case Collective::ReduceScatter:
      k.a.copy_(pattern(k.a.numel(), 0, dtype).mul_(r + 1));
      want = pattern(k.per_rank, static_cast<std::int64_t>(r) * k.per_rank, dtype).mul_(ranks_sum);
      got = k.b;
      break;
    case Collective::Allgather: {
      k.a.copy_(pattern(k.per_rank, static_cast<std::int64_t>(r) * k.per_rank, dtype).mul_(r + 1));
      want = pattern(k.b.numel(), 0, dtype);
      for (int q = 0; q < n; ++q) want.narrow(0, q * k.per_rank, k.per_rank).mul_(q + 1);
      got = k.b;
      break;
    }
  }
  const sdk::Status s = run_once(comm, k);
  if (!s.ok) return s.message;
  // float32 sums of these integers are exact; bfloat16 partial sums round only past 256 (> 8 ranks).
  const bool same = dtype == torch::kFloat ? torch::equal(got, want)
                                           : torch::allclose(got.to(torch::kFloat), want.to(torch::kFloat), 1e-2, 0);
  k.a.zero_();
  if (k.b.defined()) k.b.zero_();
  if (same) return "";
  const torch::Tensor bad = (got.to(torch::kFloat) - want.to(torch::kFloat)).abs().gt(0.5).nonzero();
  const std::int64_t i = bad.numel() > 0 ? bad[0][0].item<std::int64_t>() : 0;
  return fmt::format("{} gave a wrong result on rank {}: element {} is {}, expected {}", algorithm, r, i,
                     got[i].item<double>(), want[i].item<double>());
}

struct Figures {
  double seconds = 0, algbw = 0, busbw = 0;  // GB/s = 1e9 bytes/s
  // hierarchical only: the slowest rank's mean time in each phase and its busbw (0 otherwise)
  double intra_seconds = 0, intra_busbw = 0, inter_seconds = 0, inter_busbw = 0;
};

class CommBench {
 public:
  CommBench(const BenchArgs& args, comm::HostCommunicator& comm) : args_(args), comm_(comm) {}

  void run() {
    const Collective collective = parse_collective(args_.collective);
    const torch::ScalarType dtype = args_.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
    const std::uint64_t min_bytes = parse_bytes(args_.min_bytes), max_bytes = parse_bytes(args_.max_bytes);
    if (min_bytes == 0 || min_bytes > max_bytes)
      throw std::invalid_argument("bench comm: --min-bytes must be > 0 and <= --max-bytes");
    if (args_.iters < 1 || args_.warmup < 0) throw std::invalid_argument("bench comm: --iters >= 1, --warmup >= 0");
    std::vector<sdk::Communicator*> views;
    for (const std::string& a : args_.algorithms) views.push_back(&view(a));
    const int n = comm_.size();
    const int threads = device::choose_threads(args_.threads, ranks_sharing_cores());
    device::set_compute_threads(threads);

    nlohmann::json report{{"collective", args_.collective},
                          {"dtype", args_.dtype},
                          {"ranks", n},
                          {"ranks_on_node", comm_.local_size()},
                          {"backend", comm_.backend()},
                          {"iters", args_.iters},
                          {"warmup", args_.warmup},
                          {"threads", threads},
                          {"algorithms", args_.algorithms},
                          {"ring_tuning", ring_tuning()},
                          {"bus_factor", bus_factor(collective, n)},
                          {"results", nlohmann::json::array()}};
    if (const auto* backend = dynamic_cast<const comm::MpiCommunicator*>(&comm_.transport()); backend != nullptr) {
      // The split hierarchical uses (GRADSWEEP_RANKS_PER_NODE's, if set); "" when its nodes are equal.
      const comm::mpi::NodeSplit& split = backend->node_split();
      report["hierarchical_split"] = {
          {"ranks_per_node", split.node_size()}, {"nodes", split.cross_size()}, {"uneven", split.uneven()}};
    }
    if (comm_.rank() == 0) print_header(collective, n, threads);
    for (std::uint64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      Case k = make_case(collective, bytes, dtype, n);
      if (k.bytes == 0) continue;  // smaller than one element per rank
      check(k, views);
      const std::vector<Figures> figures = time(k, views, collective);
      if (comm_.rank() == 0) print_row(k, figures, report);
    }
    if (comm_.rank() == 0 && !args_.json.empty()) util::write_file_atomically(args_.json, report.dump(2) + "\n");
  }

 private:
  static Collective parse_collective(const std::string& name) {
    if (name == "allreduce") return Collective::Allreduce;
    if (name == "reduce_scatter") return Collective::ReduceScatter;
    return Collective::Allgather;  // the option's check allows nothing else
  }

  // The nodes of an emulated cluster (GRADSWEEP_CLUSTER, set by `cluster exec` and the emulated launcher)
  // are namespaces on one machine: every rank of the job shares its cores, not only the node's. With the
  // node's count, 2 nodes on 2 cores ran 2 LibTorch threads per rank, and each of the ring's per-segment
  // reductions waited for a second thread to be scheduled: 0.05 GB/s at 1 Gbit/s instead of 0.09-0.11.
  int ranks_sharing_cores() const { return env::is_set("GRADSWEEP_CLUSTER") ? comm_.size() : comm_.local_size(); }

  // "ring" through the communicator stack, as a strategy calls it; "ring-bare" on the MPI backend itself.
  sdk::Communicator& view(const std::string& name) {
    const auto [algorithm, bare] = parse_algorithm(name);
    sdk::Communicator& base = bare ? comm_.transport() : comm_;
    return sdk::collective::with_algorithm(base, algorithm == "ring"           ? sdk::Algorithm::Ring
                                                 : algorithm == "hierarchical" ? sdk::Algorithm::Hierarchical
                                                                               : sdk::Algorithm::Native);
  }

  nlohmann::json ring_tuning() const {
    const comm::ring::Tuning defaults;
    // The communicator has refused a bad value already; the same parser reads it here.
    auto tuned = [](const char* name, long fallback) {
      return env::positive_integer(name, LONG_MAX).value_or(fallback);
    };
    return {{"segment_bytes", tuned("GRADSWEEP_RING_SEGMENT_BYTES", static_cast<long>(defaults.segment_bytes))},
            {"lookahead", tuned("GRADSWEEP_RING_LOOKAHEAD", defaults.lookahead)}};
  }

  // Every algorithm once on known data. A wrong result on any rank ends the benchmark on every rank
  // (the verdicts are combined first, so no rank is left waiting): it is an error, not a figure.
  void check(Case& k, const std::vector<sdk::Communicator*>& views) {
    std::string problem;
    for (std::size_t a = 0; a < views.size(); ++a) {  // every rank runs every check, whatever it found
      const std::string found = check_once(*views[a], k, args_.algorithms[a]);
      if (problem.empty()) problem = found;
    }
    if (!problem.empty()) spdlog::error("bench comm: {} of {}: {}", args_.collective, human_bytes(k.bytes), problem);
    torch::Tensor bad = torch::full({1}, problem.empty() ? 0 : 1, torch::kInt);
    sdk::check(comm_.allreduce(bad, sdk::ReduceOp::Max));
    if (bad.item<int>() != 0)
      throw std::runtime_error("bench comm: " + args_.collective + " of " + human_bytes(k.bytes) +
                               " gave a wrong result" + (problem.empty() ? " on another rank" : ": " + problem));
  }

  std::vector<Figures> time(Case& k, const std::vector<sdk::Communicator*>& views, Collective collective) {
    const std::size_t algos = views.size();
    // [a] the call, [algos + a] its intra-node phases, [2 algos + a] its inter-node phase (hierarchical)
    torch::Tensor seconds = torch::zeros({3 * static_cast<std::int64_t>(algos)}, torch::kDouble);
    auto* backend = dynamic_cast<comm::MpiCommunicator*>(&comm_.transport());
    for (int it = -args_.warmup; it < args_.iters; ++it) {
      for (std::size_t j = 0; j < algos; ++j) {
        const std::size_t a = (j + static_cast<std::size_t>(it + args_.warmup)) % algos;  // who goes first rotates
        sdk::check(comm_.barrier());
        const auto t0 = Clock::now();
        sdk::check(run_once(*views[a], k));
        const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        if (it < 0) continue;
        const auto i = static_cast<std::int64_t>(a);
        seconds[i] += dt;
        if (backend != nullptr && parse_algorithm(args_.algorithms[a]).first == "hierarchical" &&
            k.collective == Collective::Allreduce) {
          const comm::hierarchical::Phases p = backend->last_hierarchical_phases();
          seconds[static_cast<std::int64_t>(algos) + i] += p.intra_seconds;
          seconds[2 * static_cast<std::int64_t>(algos) + i] += p.inter_seconds;
        }
      }
    }
    seconds.div_(args_.iters);
    sdk::check(comm_.allreduce(seconds, sdk::ReduceOp::Max));  // the slowest rank's mean
    std::vector<Figures> out(algos);
    for (std::size_t a = 0; a < algos; ++a) {
      Figures& f = out[a];
      f.seconds = seconds[static_cast<std::int64_t>(a)].item<double>();
      f.algbw = f.seconds > 0 ? static_cast<double>(k.bytes) / f.seconds / 1e9 : 0.0;
      f.busbw = f.algbw * bus_factor(collective, comm_.size());
      f.intra_seconds = seconds[static_cast<std::int64_t>(algos + a)].item<double>();
      f.inter_seconds = seconds[static_cast<std::int64_t>(2 * algos + a)].item<double>();
      if (backend != nullptr && (f.intra_seconds > 0 || f.inter_seconds > 0)) {
        const comm::mpi::NodeSplit& split = backend->node_split();
        const double s = static_cast<double>(k.bytes), per_node = split.node_size();
        if (f.intra_seconds > 0) f.intra_busbw = s * bus_factor(collective, split.node_size()) / f.intra_seconds / 1e9;
        if (f.inter_seconds > 0)
          f.inter_busbw = s / per_node * bus_factor(collective, split.cross_size()) / f.inter_seconds / 1e9;
      }
    }
    comm_.take_stats();  // the benchmark's own traffic is not anyone's step
    return out;
  }

  void print_header(Collective collective, int n, int threads) const {
    const nlohmann::json tuning = ring_tuning();
    std::cout << fmt::format(
                     "# gradsweep bench comm: {} of {} on {} ranks ({}, {} on this node), {} iterations after "
                     "{} warm-up, {} compute thread(s) per rank\n",
                     args_.collective, args_.dtype, n, comm_.backend(), comm_.local_size(), args_.iters, args_.warmup,
                     threads)
              << fmt::format(
                     "# ring: {} segments, lookahead {}; time = slowest rank's mean; algbw = S/time; "
                     "busbw = algbw x {:.3f}; GB/s = 1e9 B/s\n",
                     human_bytes(tuning["segment_bytes"].get<std::uint64_t>()), tuning["lookahead"].get<int>(),
                     bus_factor(collective, n));
    std::string head = fmt::format("# {:>12} {:>12}", "size(B)", "elements");
    for (const std::string& a : args_.algorithms)
      head += fmt::format(" | {:>8} {:>10} {:>7} {:>7}", a, "time(us)", "algbw", "busbw");
    if (args_.algorithms.size() == 2) head += fmt::format(" | {}/{}", args_.algorithms[1], args_.algorithms[0]);
    std::cout << head << std::endl;
  }

  void print_row(const Case& k, const std::vector<Figures>& figures, nlohmann::json& report) const {
    const std::int64_t elements = k.collective == Collective::Allreduce ? k.per_rank : k.per_rank * comm_.size();
    std::string row = fmt::format("  {:>12} {:>12}", k.bytes, elements);
    nlohmann::json entry{{"bytes", k.bytes}, {"elements", elements}};
    std::string phases;
    for (std::size_t a = 0; a < figures.size(); ++a) {
      const Figures& f = figures[a];
      row += fmt::format(" | {:>8} {:>10.1f} {:>7.2f} {:>7.2f}", "", f.seconds * 1e6, f.algbw, f.busbw);
      entry[args_.algorithms[a]] = {{"time_us", f.seconds * 1e6}, {"algbw_gbps", f.algbw}, {"busbw_gbps", f.busbw}};
      if (f.intra_seconds > 0 || f.inter_seconds > 0) {
        entry[args_.algorithms[a]]["intra_time_us"] = f.intra_seconds * 1e6;
        entry[args_.algorithms[a]]["intra_busbw_gbps"] = f.intra_busbw;
        entry[args_.algorithms[a]]["inter_time_us"] = f.inter_seconds * 1e6;
        entry[args_.algorithms[a]]["inter_busbw_gbps"] = f.inter_busbw;
        phases += fmt::format("    {} intra-node {:.1f} us busbw {:.2f}; inter-node {:.1f} us busbw {:.2f}\n",
                              args_.algorithms[a], f.intra_seconds * 1e6, f.intra_busbw, f.inter_seconds * 1e6,
                              f.inter_busbw);
      }
    }
    if (figures.size() == 2 && figures[1].seconds > 0) {
      const double ratio = figures[0].seconds / figures[1].seconds;  // = busbw[1] / busbw[0]
      row += fmt::format(" | {:>6.3f}", ratio);
      entry["ratio"] = ratio;
    }
    std::cout << row << "\n" << phases << std::flush;
    report["results"].push_back(entry);
  }

  const BenchArgs& args_;
  comm::HostCommunicator& comm_;
};

}  // namespace

void register_bench_comm_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand(
      "comm", "Collective bandwidth of each algorithm of the MPI backend (run under mpirun -np N)");
  cmd->add_option("--collective", args->collective, "allreduce, reduce_scatter or allgather")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather"}))
      ->capture_default_str();
  cmd->add_option("--min-bytes", args->min_bytes, "Smallest size S (nccl-tests' size: the full tensor)")
      ->capture_default_str();
  cmd->add_option("--max-bytes", args->max_bytes, "Largest size S; sizes double from --min-bytes")
      ->capture_default_str();
  cmd->add_option("--iters", args->iters, "Timed iterations per size and algorithm")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed iterations first")->capture_default_str();
  cmd->add_option("--algorithms", args->algorithms,
                  "native, ring, hierarchical (comma-separated; default native,ring, "
                  "plus hierarchical on more than one node or with GRADSWEEP_RANKS_PER_NODE); "
                  "each also as NAME-bare: on the MPI backend without the communicator stack's layers")
      ->delimiter(',')
      ->check(CLI::IsMember({"native", "ring", "hierarchical", "native-bare", "ring-bare", "hierarchical-bare"}))
      ->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  cmd->add_option("--json", args->json, "Also write the figures to this file (rank 0)");
  cmd->add_option("--threads", args->threads, "LibTorch threads per rank (0: the node's cores shared by its ranks)")
      ->capture_default_str();
  CLI::Option* algorithms = cmd->get_option("--algorithms");
  cmd->callback([args, algorithms] {
    // Through the stack, as a strategy gets it: what is measured is what a cell's calls cost.
    std::unique_ptr<comm::HostCommunicator> comm = comm::make_communicator("mpi");
    services::init_logging(comm->rank());
    if (algorithms->count() == 0 && (comm->local_size() < comm->size() || comm::mpi::ranks_per_node_override() > 0))
      args->algorithms.push_back("hierarchical");
    try {
      CommBench(*args, *comm).run();
    } catch (const std::exception& e) {
      if (comm->size() == 1) throw;  // main prints it and exits 2
      // Another rank may be waiting in a collective for this one: end them all, as `train` does.
      spdlog::error("{}", e.what());
      spdlog::default_logger()->flush();
      comm::mpi::abort_job(2);
    }
  });
}

}  // namespace gradsweep::cli

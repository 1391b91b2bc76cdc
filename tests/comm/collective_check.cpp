// Runs on every rank of an `mpirun -np N` job and checks the MPI backend against references computed
// locally: each rank fills its tensors with rank-dependent values, so every result is known in advance
// (check_support.hpp). comm_test.cpp launches it and reads what it prints:
//
//   collective_check verify        all collectives with each algorithm, async, point-to-point, byte
//                                  counters and argument errors; prints "FAIL rank R: ..." per failure
//                                  and "DONE rank R of N checks=C failures=F"
//   collective_check ring          the ring sections only ("DONE rank R of N ring checks=..."), for runs
//                                  with unusual GRADSWEEP_RING_* tuning
//   collective_check hierarchical  the hierarchical view's sections only, after a line per rank with its
//                                  node split ("rank R: node L of S, nodes N, uneven: ...")
//   collective_check throw RANK    RANK throws while the others wait in an allreduce: the job must end
//   collective_check hang RANK     RANK never joins an allreduce: the others' watchdog must end the job
//   collective_check hang-async RANK   the same, the others waiting for an async allreduce
//   collective_check stop RANK     RANK stops itself (SIGSTOP) before the allreduce: it cannot answer
//   collective_check ring-stop RANK   the same, the allreduce through the ring algorithm: the ranks waiting
//                                  point at the peers they wait on
//   collective_check skip RANK     RANK skips the allreduce and goes on to the barrier
//   collective_check size RANK     RANK allreduces 1000 elements where the others allreduce 1024
//   collective_check groups        sub-communicators (check_groups.cpp; 4 ranks, GRADSWEEP_RANKS_PER_NODE=2)
//   collective_check group-hang RANK DIR   RANK never joins an allreduce of its group
//   collective_check late RANK     RANK joins a ring allreduce (async) 1 s after the others, who print
//                                  "rank R: waited W s, cpu C s": the CPU their process spent meanwhile
//   collective_check async-progress   each rank issues an async allreduce, waits for it 1 s later, and prints
//                                  "rank R: <state>, ended before the wait: yes|no" from its flight recorder
//
// The misbehaving modes take the directory for flight-recorder dumps as a third argument (optional):
// after a barrier (collective #1), the allreduce is collective #2.
#include "check_groups.hpp"
#include "check_support.hpp"
#include "comm/registry/backend_registry.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/flight_recorder.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "services/logging.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>

namespace {

using namespace gradsweep;

// What train_command does when a rank fails: log on that rank, then end the job.
[[noreturn]] void fail_job(const std::string& why) {
  spdlog::error("{}", why);
  comm::forensics::on_rank_failure(why);
  spdlog::default_logger()->flush();
  comm::mpi::abort_job(2);
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// `late`: how much CPU a rank spends while its ring allreduce waits for a rank that comes 1 s late (the
// communication thread's wait, the caller blocked in wait()); a spinning wait costs about a core.
int late_neighbour(comm::HostCommunicator& comm, int late) {
  sdk::check(comm.barrier());
  torch::Tensor t = torch::ones({1 << 20});
  if (comm.rank() == late) std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = process_cpu_seconds();
  std::unique_ptr<sdk::Request> request;
  sdk::check(
      sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring).allreduce_async(t, sdk::ReduceOp::Sum, &request));
  sdk::check(request->wait());
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = process_cpu_seconds() - cpu0;
  if (comm.rank() != late) std::printf("rank %d: waited %.3f s, cpu %.3f s\n", comm.rank(), waited, cpu);
  std::fflush(stdout);
  sdk::check(comm.barrier());
  return t[0].item<float>() == static_cast<float>(comm.size()) ? 0 : 1;
}

// `async-progress`: the recorder layer's entry of an async call follows the MPI worker (comm/core/async_progress.hpp):
// it ends when the worker finished the allreduce, long before the caller's wait 1 s later. A layer that saw only
// issue and wait would end it at the wait.
int async_progress(comm::HostCommunicator& comm) {
  sdk::check(comm.barrier());
  torch::Tensor t = torch::ones({1024});
  std::unique_ptr<sdk::Request> request;
  sdk::check(comm.allreduce_async(t, sdk::ReduceOp::Sum, &request));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::int64_t waited_from = comm::wall_clock_ns();
  sdk::check(request->wait());
  const comm::FlightEntry entry = comm.flight_recorder()->entries().back();
  std::printf("rank %d: %s %s, ended before the wait: %s\n", comm.rank(), comm::to_string(entry.shape.op),
              comm::to_string(entry.state), entry.ended_ns != 0 && entry.ended_ns < waited_from ? "yes" : "no");
  std::fflush(stdout);
  sdk::check(comm.barrier());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "verify";
  const int failing = argc > 2 ? std::stoi(argv[2]) : -1;
  torch::set_num_threads(1);
  std::unique_ptr<comm::HostCommunicator> comm;
  try {
    comm = comm::make_communicator("mpi");  // what a strategy gets: the backend inside the stack's layers
  } catch (const std::exception& e) {
    std::cerr << "collective_check: " << e.what() << std::endl;
    return 2;
  }
  services::init_logging(comm->rank());
  if (mode == "verify" || mode == "ring" || mode == "hierarchical") {
    std::printf("rank %d: %s\n", comm->rank(), comm::mpi::thread_level_name(comm::mpi::ensure_initialized()).c_str());
    check::Checker checker(*comm);
    if (mode == "hierarchical") {
      const auto& split = dynamic_cast<comm::MpiCommunicator&>(comm->transport()).node_split();
      std::printf("rank %d: node rank %d of %d, nodes %d, uneven: %s\n", comm->rank(), split.node_rank(),
                  split.node_size(), split.cross_size(), split.uneven().empty() ? "no" : split.uneven().c_str());
      std::fflush(stdout);
      return checker.run_hierarchical();
    }
    return mode == "ring" ? checker.run_ring() : checker.run_all();
  }
  if (mode == "late") return late_neighbour(*comm, failing);
  if (mode == "async-progress") return async_progress(*comm);
  if (mode == "groups") return check::run_groups(*comm);
  if (mode == "group-hang") {
    try {
      return check::group_hang(*comm, failing, argc > 3 ? argv[3] : "");
    } catch (const std::exception& e) {
      fail_job(e.what());
    }
  }
  if (argc > 3) comm::forensics::set_directory(argv[3], comm->rank());
  const bool ring = mode == "ring-stop";
  try {
    sdk::check(comm->barrier());
    torch::Tensor t = torch::ones({1024});
    const bool misbehaves = comm->rank() == failing;
    if (misbehaves) {
      if (mode == "throw") throw std::runtime_error("deliberate failure on rank " + std::to_string(failing));
      if (mode == "stop" || ring) std::raise(SIGSTOP);
      if (mode == "hang" || mode == "hang-async") std::this_thread::sleep_for(std::chrono::seconds(60));
      if (mode == "size") t = torch::ones({1000});
    }
    if (mode == "skip" && misbehaves) {
      // no allreduce: straight to the barrier below
    } else if (mode == "hang-async") {
      std::unique_ptr<sdk::Request> request;
      sdk::check(comm->allreduce_async(t, sdk::ReduceOp::Sum, &request));
      sdk::check(request->wait());
    } else if (ring) {
      sdk::check(sdk::collective::with_algorithm(*comm, sdk::Algorithm::Ring).allreduce(t, sdk::ReduceOp::Sum));
    } else {
      sdk::check(comm->allreduce(t, sdk::ReduceOp::Sum));
    }
    sdk::check(comm->barrier());
    std::printf("rank %d: the job was not ended\n", comm->rank());
    return 0;
  } catch (const std::exception& e) {
    fail_job(e.what());
  }
}

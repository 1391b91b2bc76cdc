#pragma once
// What the tests of sweeps on emulated clusters share: whether this machine can make one, what a cluster left
// behind, the cluster a running cell is on, and `gradsweep run` in the foreground or the background.
#include "experiment/experiment_test_support.hpp"
#include "support/test_support.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace gradsweep::test {

// Why this machine cannot make an emulated cluster ("" when it can): not root, no `ip netns`, no `tc`.
std::string missing_cluster_requirement();

// Every object of cluster `name` still on the machine, one per line ("" when none is left).
std::string objects_of(const std::string& name);

// The file's JSON, or a discarded value when it is missing or does not parse.
nlohmann::json read_json(const std::filesystem::path& file);

// The cluster a running cell is on (its provenance says once the cluster is up), or "".
std::string cluster_of(const std::filesystem::path& cell);

// `gradsweep run EXP --out OUT FLAGS` as root may run mpirun, under a timeout of `seconds`.
CommandResult run_sweep(const std::filesystem::path& exp, const std::filesystem::path& out,
                        const std::string& flags = "", int seconds = 240);

// `gradsweep run` in the background, its output in `log`; returns its pid.
pid_t start_sweep(const std::filesystem::path& exp, const std::filesystem::path& out, const std::filesystem::path& log);

// Kills (SIGKILL) every `gradsweep train` process inside `node_namespace`; returns how many.
int kill_ranks_in(const std::string& node_namespace);

template <typename F>
bool wait_for(F condition, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

}  // namespace gradsweep::test

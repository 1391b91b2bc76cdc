#pragma once
// The record of a run: one JSON line per step in metrics.jsonl, and the summary.json written at the end.
// The schema is documented in docs/results.md.
#include "comm/core/host_communicator.hpp"
#include "device/machine.hpp"
#include "train/rank_report.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

namespace gradsweep::train {

struct StepTimes {  // seconds
  double step = 0, data = 0, forward = 0, backward = 0, comm = 0, update = 0;
};

struct StepRecord {
  std::int64_t step;
  double loss;
  double lr;
  sdk::StepResult result;
  StepTimes times;
  comm::CommStats comm;
  double tokens_per_sec;  // all ranks together
  double mfu;
  std::optional<double> val_loss;
  std::map<std::string, double> plugin_metrics;
  std::vector<RankStep> ranks;  // every rank's counters, rank-major
  comm::GroupStats groups;      // this rank's sub-communicators' share of `comm`, by group name
};

// Communication figures of one rank's step, by the nccl-tests definitions (docs/results.md).
struct CommFigures {
  double overlap;     // 1 - blocked / busy: the share of communication hidden behind computation
  double algbw_gbps;  // payload (S) / busy time
  double busbw_gbps;  // bytes sent / busy time (bytes are counted as a ring moves them)
};
CommFigures comm_figures(const comm::CommStats& c);

// Running means over the measured steps (the first step, which pays for warm-up, is left out when
// there are others).
struct RunTotals {
  std::int64_t steps = 0;
  StepTimes times;
  double bytes_sent = 0, bytes_received = 0, mfu = 0;
  double comm_busy = 0, comm_blocked = 0, payload_bytes = 0;
  std::vector<double> rank_bytes_sent, rank_bytes_received;
  // Per group name, the mean per step of bytes each way, busy seconds and calls (a step without the
  // group's traffic counts as zero).
  struct GroupMeans {
    double bytes_sent = 0, bytes_received = 0, seconds = 0, calls = 0;
  };
  std::map<std::string, GroupMeans> groups;
  std::int64_t skipped_updates = 0;
  void add(const StepRecord& r, bool warmup);
};

struct RunFacts {
  sdk::ModelInfo model;
  std::string model_name, strategy_name;
  int world_size;
  int threads;
  std::int64_t steps;
  device::PeakFlops peak;
  double flops_per_token;
  std::string device;
  std::string comm_backend;
  // The strategy trains a softmax over part of the vocabulary: its compute is not a dense model's (the
  // projection lends it to no strategy that runs none) and the FLOPs per token overstate what it did.
  bool restricts_vocabulary = false;
};

class MetricsLog {
 public:
  // Only `enabled` (rank 0) writes. Resuming at `start_step` > 0 keeps the records of earlier steps and
  // drops any later ones left by the interrupted run, so every step appears exactly once.
  MetricsLog(const std::filesystem::path& path, bool enabled, std::int64_t start_step);
  // Throws "no space left writing metrics.jsonl in DIR" (or "cannot write ...") when a line cannot be written.
  // Returns the line written (null where nothing is written), for the TensorBoard events made from it.
  nlohmann::json write(const StepRecord& record);

 private:
  void flush_or_throw();
  std::filesystem::path path_;
  std::ofstream out_;
};

nlohmann::json make_summary(const RunFacts& facts, const RunTotals& totals, double final_train_loss, double val_loss,
                            const YAML::Node& resolved_config);

// YAML -> JSON for the resolved config inside summary.json (scalars become numbers/bools when they parse).
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace gradsweep::train

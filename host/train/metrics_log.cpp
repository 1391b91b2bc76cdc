#include "train/metrics_log.hpp"

#include "device/machine.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json comm_json(const comm::CommStats& c) {
  const CommFigures f = comm_figures(c);
  return {{"busy_s", c.seconds},
          {"blocked_s", c.blocked_seconds},
          {"calls", c.calls},
          {"payload_bytes", c.payload_bytes},
          {"overlap", number_or_null(f.overlap)},
          {"algbw_gbps", number_or_null(f.algbw_gbps)},
          {"busbw_gbps", number_or_null(f.busbw_gbps)}};
}

// comm.groups: {"<name>": {bytes_sent, bytes_received, seconds, calls}}, or nothing without groups.
template <class Stats>
void add_groups_json(nlohmann::json& comm, const std::map<std::string, Stats>& groups) {
  for (const auto& [name, g] : groups)
    comm["groups"][name] = {
        {"bytes_sent", g.bytes_sent}, {"bytes_received", g.bytes_received}, {"seconds", g.seconds}, {"calls", g.calls}};
}
}  // namespace

CommFigures comm_figures(const comm::CommStats& c) {
  if (c.seconds <= 0) return {std::nan(""), std::nan(""), std::nan("")};
  return {std::clamp(1.0 - c.blocked_seconds / c.seconds, 0.0, 1.0),
          static_cast<double>(c.payload_bytes) / c.seconds / 1e9, static_cast<double>(c.bytes_sent) / c.seconds / 1e9};
}

void RunTotals::add(const StepRecord& r, bool warmup) {
  if (!r.result.applied) ++skipped_updates;
  if (warmup) return;
  const double n = static_cast<double>(++steps);
  auto mean = [n](double& acc, double v) { acc += (v - acc) / n; };
  mean(times.step, r.times.step);
  mean(times.data, r.times.data);
  mean(times.forward, r.times.forward);
  mean(times.backward, r.times.backward);
  mean(times.comm, r.times.comm);
  mean(times.update, r.times.update);
  mean(bytes_sent, static_cast<double>(r.comm.bytes_sent));
  mean(bytes_received, static_cast<double>(r.comm.bytes_received));
  mean(mfu, r.mfu);
  mean(comm_busy, r.comm.seconds);
  mean(comm_blocked, r.comm.blocked_seconds);
  mean(payload_bytes, static_cast<double>(r.comm.payload_bytes));
  rank_bytes_sent.resize(r.ranks.size(), 0.0);
  rank_bytes_received.resize(r.ranks.size(), 0.0);
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    mean(rank_bytes_sent[k], static_cast<double>(r.ranks[k].comm.bytes_sent));
    mean(rank_bytes_received[k], static_cast<double>(r.ranks[k].comm.bytes_received));
  }
  for (const auto& [name, g] : r.groups) groups[name];  // a group first seen now was zero in earlier steps
  for (auto& [name, m] : groups) {
    const auto it = r.groups.find(name);
    const comm::CommStats g = it == r.groups.end() ? comm::CommStats{} : it->second;
    m.bytes_sent += (static_cast<double>(g.bytes_sent) - m.bytes_sent) / n;
    m.bytes_received += (static_cast<double>(g.bytes_received) - m.bytes_received) / n;
    m.seconds += (g.seconds - m.seconds) / n;
    m.calls += (static_cast<double>(g.calls) - m.calls) / n;
  }
}

MetricsLog::MetricsLog(const fs::path& path, bool enabled, std::int64_t start_step) {
  if (!enabled) return;
  std::string kept;
  if (start_step > 0) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      try {
        if (nlohmann::json::parse(line).at("step").get<std::int64_t>() < start_step) kept += line + "\n";
      } catch (const std::exception&) {
        // A line cut short by the interruption: drop it.
      }
    }
  }
  path_ = path;
  out_.open(path, std::ios::trunc);
  out_ << kept;
  flush_or_throw();
}

void MetricsLog::flush_or_throw() {
  errno = 0;
  out_.flush();
  if (out_) return;
  // A full disk would otherwise drop every later line without a word.
  const int error = errno;
  throw std::runtime_error((error == ENOSPC || error == EDQUOT ? "no space left writing " : "cannot write ") +
                           path_.filename().string() + " in " + path_.parent_path().string() +
                           (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
}

nlohmann::json MetricsLog::write(const StepRecord& r) {
  if (!out_.is_open()) return nullptr;
  nlohmann::json j{{"step", r.step},
                   {"loss", number_or_null(r.loss)},
                   {"lr", r.lr},
                   {"update_applied", r.result.applied},
                   {"grad_norm", number_or_null(r.result.grad_norm)},
                   {"tokens_per_sec", r.tokens_per_sec},
                   {"mfu", r.mfu},
                   {"time_s",
                    {{"step", r.times.step},
                     {"data", r.times.data},
                     {"forward", r.times.forward},
                     {"backward", r.times.backward},
                     {"comm", r.times.comm},
                     {"update", r.times.update}}},
                   {"bytes_sent", r.comm.bytes_sent},
                   {"bytes_received", r.comm.bytes_received},
                   {"comm", comm_json(r.comm)},
                   {"peak_rss_mb", device::peak_rss_mb()},
                   {"minor_faults", device::minor_faults()}};
  if (r.val_loss) {
    j["val_loss"] = *r.val_loss;
    j["val_ppl"] = std::exp(*r.val_loss);
  }
  add_groups_json(j["comm"], r.groups);
  for (const auto& [name, value] : r.plugin_metrics) j["plugin"][name] = value;
  if (r.ranks.size() > 1)
    for (const RankStep& k : r.ranks) {
      j["ranks"]["bytes_sent"].push_back(k.comm.bytes_sent);
      j["ranks"]["bytes_received"].push_back(k.comm.bytes_received);
      j["ranks"]["comm_busy_s"].push_back(k.comm.seconds);
    }
  out_ << j.dump() << '\n';
  flush_or_throw();
  return j;
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& item : node) j[item.first.as<std::string>()] = yaml_to_json(item.second);
    return j;
  }
  if (node.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& item : node) j.push_back(yaml_to_json(item));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string s = node.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  std::size_t used = 0;
  try {
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

nlohmann::json make_summary(const RunFacts& f, const RunTotals& t, double final_train_loss, double val_loss,
                            const YAML::Node& resolved_config) {
  const double step_time = t.times.step;
  const double tokens_per_step = static_cast<double>(resolved_config["train"]["batch_size"].as<std::int64_t>() *
                                                     resolved_config["train"]["seq_len"].as<std::int64_t>());
  nlohmann::json summary{
      {"status", "ok"},
      {"model", f.model_name},
      {"architecture", f.model.architecture},
      {"strategy", f.strategy_name},
      {"world_size", f.world_size},
      {"threads_per_rank", f.threads},
      {"device", f.device},
      {"comm_backend", f.comm_backend},
      {"params", f.model.num_parameters},
      {"steps", f.steps},
      {"measured_steps", t.steps},
      {"tokens_per_step", tokens_per_step},
      {"tokens_per_sec", step_time > 0 ? tokens_per_step / step_time : 0.0},
      {"step_time_s", step_time},
      {"time_split_s",
       {{"data", t.times.data},
        {"forward", t.times.forward},
        {"backward", t.times.backward},
        {"comm", t.times.comm},
        {"update", t.times.update}}},
      {"final_train_loss", number_or_null(final_train_loss)},
      {"val_loss", number_or_null(val_loss)},
      {"val_ppl", number_or_null(std::exp(val_loss))},
      {"bytes_sent_per_step", t.bytes_sent},
      {"bytes_received_per_step", t.bytes_received},
      {"bytes_sent_per_step_by_rank", t.rank_bytes_sent},
      {"bytes_received_per_step_by_rank", t.rank_bytes_received},
      {"comm",
       comm_json(comm::CommStats{static_cast<std::uint64_t>(t.bytes_sent), static_cast<std::uint64_t>(t.bytes_received),
                                 t.comm_busy, 0, static_cast<std::uint64_t>(t.payload_bytes), t.comm_blocked})},
      {"skipped_updates", t.skipped_updates},
      {"flops_per_token", f.flops_per_token},
      {"peak_flops_per_rank", f.peak.per_rank},
      {"peak_flops_precision", f.peak.precision},
      {"peak_flops_source", f.peak.source},
      {"mfu", t.mfu},
      {"mfu_flag", device::mfu_flag(t.mfu, f.restricts_vocabulary)},
      {"restricts_vocabulary", f.restricts_vocabulary},
      {"peak_rss_mb", device::peak_rss_mb()},
      {"config", yaml_to_json(resolved_config)},
  };
  add_groups_json(summary["comm"], t.groups);  // per-step means
  return summary;
}

}  // namespace gradsweep::train

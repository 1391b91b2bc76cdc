#include "train/metrics_log.hpp"

#include "train/machine.hpp"

#include <cmath>
#include <sstream>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

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
  out_.open(path, std::ios::trunc);
  out_ << kept;
  out_.flush();
}

void MetricsLog::write(const StepRecord& r) {
  if (!out_.is_open()) return;
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
                   {"peak_rss_mb", peak_rss_mb()}};
  if (r.val_loss) {
    j["val_loss"] = *r.val_loss;
    j["val_ppl"] = std::exp(*r.val_loss);
  }
  for (const auto& [name, value] : r.plugin_metrics) j["plugin"][name] = value;
  out_ << j.dump() << '\n';
  out_.flush();
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
  const double tokens_per_step =
      static_cast<double>(resolved_config["train"]["batch_size"].as<std::int64_t>() *
                          resolved_config["train"]["seq_len"].as<std::int64_t>());
  return nlohmann::json{
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
      {"skipped_updates", t.skipped_updates},
      {"flops_per_token", f.flops_per_token},
      {"peak_flops_per_rank", f.peak_flops},
      {"mfu", t.mfu},
      {"peak_rss_mb", peak_rss_mb()},
      {"config", yaml_to_json(resolved_config)},
  };
}

}  // namespace gradsweep::host

#include "train/trainer.hpp"

#include "config/option_schema.hpp"
#include "data/batch_loader.hpp"
#include "data/token_shard.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_instance.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"
#include "train/autocast_scope.hpp"
#include "train/checkpoint.hpp"
#include "train/gradient_hooks.hpp"
#include "train/lr_schedule.hpp"
#include "train/machine.hpp"
#include "train/metrics_log.hpp"
#include "train/model_agreement.hpp"
#include "train/output_vocabulary.hpp"
#include "train/rank_report.hpp"
#include "train/timeline.hpp"
#include "train/unit_events.hpp"
#include "util/atomic_file.hpp"

#include <torch/cuda.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace gradsweep::host {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GPU work is asynchronous: without a sync at a phase boundary its time would be charged to the next phase.
void sync_device(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// A token id the model has no embedding row for would index out of bounds deep inside LibTorch.
void check_vocabulary(const data::TokenShard& shard, const sdk::ModelInfo& info, const CellConfig& config) {
  const std::uint16_t* tokens = shard.tokens();
  const std::int64_t max_token = shard.size() == 0 ? 0 : *std::max_element(tokens, tokens + shard.size());
  if (max_token >= info.vocab_size)
    throw ConfigError({config.file + ": " + shard.path().string() + " holds token id " + std::to_string(max_token) +
                       " but model '" + config.model_name + "' has vocab_size " + std::to_string(info.vocab_size) +
                       "; set model.vocab_size to the tokenizer's vocabulary (see dataset.json)"});
}

// The planner's check (plugins/plugin_declarations.hpp) on the job as it is, so that a hand-written cell is
// refused with the same words as a planned one, before the strategy is created.
PlanVerdict check_strategy_fits_job(const PluginRecord& strategy, const CellConfig& config, const HostCommunicator& comm,
                             const sdk::Options& options, const sdk::ModelInfo& info) {
  sdk::PlanFacts facts;
  facts.world_size = comm.size();
  facts.ranks_per_node = comm.local_size();
  facts.nodes = (comm.size() + comm.local_size() - 1) / std::max(1, comm.local_size());
  facts.options = &options;
  facts.model = &info;
  facts.backend = comm.backend();
  facts.backend_features = comm.features();
  facts.device = config.device.c_str();
  const PlanVerdict verdict = check_strategy_plan(strategy, facts);
  // A cell file has no launcher keys: the job's ranks are the strategy's to fit. One line (not a
  // ConfigError's list), so that every rank's "[rank N] [error]" line carries the reason.
  const std::string key = verdict.about == "ranks" ? "strategy.name" : refusal_key(verdict, facts.nodes);
  if (!verdict.refusal.empty()) throw std::runtime_error(config.file + ": " + key + ": " + verdict.refusal);
  return verdict;
}

// Sums (sum, count) over ranks and returns the mean (for reporting only: not the strategy's traffic).
double mean_over_ranks(HostCommunicator& comm, double sum, double count) {
  torch::Tensor t = torch::tensor({sum, count}, torch::kDouble);
  if (comm.size() > 1) {
    sdk::check(comm.allreduce(t, sdk::ReduceOp::Sum));
    comm.take_stats();
  }
  return t[1].item<double>() > 0 ? t[0].item<double>() / t[1].item<double>() : std::nan("");
}

// Plugins built against SDK 1.0 have no role(): every rank of theirs computes.
sdk::RankRole role_of(const StrategyInstance& strategy) {
  sdk::RankRole role;
  if (strategy.record().descriptor->abi_minor >= 1) strategy.call(strategy->role(&role), "role");
  return role;
}

// Plugins built against SDK 1.4 or later may ask to hear of each model unit's forward and backward.
bool hears_units(const StrategyInstance& strategy, const sdk::RankRole& role) {
  return strategy.record().descriptor->abi_minor >= 4 && role.unit_events;
}

// The index, in the step's global batch, of this rank's first sequence of micro-batch `micro` (the
// BatchLoader's layout: rank r owns sequences [r*G/W, (r+1)*G/W), cut into micro-batches of M).
std::int64_t sample_offset(const data::BatchLoaderOptions& o, std::int64_t micro) {
  return o.rank * (o.global_batch / o.world_size) + micro * o.micro_batch;
}

// A training micro-batch with the keys of SDK 1.3: models draw dropout from (seed, step, global sample
// index), so any split of the global batch over ranks and micro-batches trains the same model.
sdk::Batch keyed_batch(const data::Batch& b, const torch::Device& device, std::int64_t step, std::int64_t seed,
                       std::int64_t first_sample) {
  sdk::Batch batch{b.inputs.to(device), b.targets.to(device)};
  batch.sample_ids = torch::arange(first_sample, first_sample + b.inputs.size(0), torch::kLong).to(device);
  batch.step = step;
  batch.seed = static_cast<std::uint64_t>(seed);
  return batch;
}

// Everything a plugin's context refers to, kept alive as long as the plugin object.
struct PluginServices {
  sdk::Options options;
  PluginLogger logger;
};

}  // namespace

nlohmann::json train_cell(const TrainRequest& request, const PluginRegistry& registry, HostCommunicator& comm) {
  const CellConfig& config = request.config;
  const TrainSettings& train = config.train;
  const int rank = comm.rank(), world = comm.size();
  const torch::Device device(config.device);
  spdlog::info("rank {} of {} is process {}", rank, world, static_cast<long>(::getpid()));
  if (device.is_cuda() && !torch::cuda::is_available())
    throw ConfigError({config.file + ": runtime.device: '" + config.device +
                       "' asked for, but this LibTorch build or machine has no CUDA device"});

  const int threads = choose_threads(static_cast<int>(config.threads), comm.local_size());
  const bool openblas = set_compute_threads(threads);
  spdlog::info("{} compute threads per rank ({} ranks on this node){}", threads, comm.local_size(),
               openblas ? ", OpenBLAS included" : "");

  // Same seed on every rank: identical initial weights without a broadcast.
  torch::manual_seed(static_cast<std::uint64_t>(train.seed));

  const PluginRecord& model_record = registry.find(sdk::PluginKind::Model, config.model_name);
  const PluginRecord& strategy_record = registry.find(sdk::PluginKind::Strategy, config.strategy_name);
  PluginServices model_services{
      resolve_plugin_options(config, "model", option_specs(model_record), option_choices(model_record)),
      PluginLogger("model " + model_record.name)};
  PluginServices strategy_services{
      resolve_plugin_options(config, "strategy", option_specs(strategy_record), option_choices(strategy_record)),
      PluginLogger("strategy " + strategy_record.name)};
  StepMetrics plugin_metrics;
  ModelInstance model(model_record, {model_services.options, model_services.logger, plugin_metrics, comm, device});
  sdk::ModelInfo info;
  model.call(model->info(&info), "info");
  std::vector<sdk::Parameter> params;
  model.call(model->parameters(&params), "parameters");
  if (info.block_size > 0 && train.seq_len > info.block_size)
    throw ConfigError({config.file + ": train.seq_len: " + std::to_string(train.seq_len) +
                       " is longer than the model's block_size " + std::to_string(info.block_size)});

  check_models_agree(comm, params);
  const PlanVerdict plan = check_strategy_fits_job(strategy_record, config, comm, strategy_services.options, info);
  StrategyInstance strategy(strategy_record,
                            {strategy_services.options, strategy_services.logger, plugin_metrics, comm, device});
  // Each global batch is split over the ranks that compute (all of them, unless a server only serves).
  const sdk::RankRole role = role_of(strategy);
  const bool computes = role.computes;
  const ComputeGroup group = compute_group(comm, computes);
  const std::int64_t micro = data::micro_batch_size(train.micro_batch, train.batch_size, group.count);
  const data::BatchLoaderOptions batching{train.batch_size, train.seq_len, micro, group.index, group.count};
  const data::BatchLoader loader(data::TokenShard::open(config.train_data), batching);
  const data::BatchLoader val_loader(data::TokenShard::open(config.val_data), batching);
  for (const data::BatchLoader* l : {&loader, &val_loader}) check_vocabulary(l->shard(), info, config);
  const std::int64_t micro_steps = loader.micro_batches_per_step();

  // A strategy that restricts the vocabulary (as it declares; see asks_for_vocabulary) gets the training
  // shard's counts, and each step the whole global batch (every rank reads it alike: the loader depends
  // only on the step). Other strategies pay for neither.
  const bool vocabulary_steps = asks_for_vocabulary(strategy_record, plan);
  std::optional<data::BatchLoader> global_loader;
  torch::Tensor token_counts;
  if (vocabulary_steps) {
    global_loader.emplace(data::TokenShard::open(config.train_data),
                          data::BatchLoaderOptions{train.batch_size, train.seq_len, train.batch_size, 0, 1});
    token_counts = count_tokens(loader.shard(), info.vocab_size);
  }
  const bool unit_steps = hears_units(strategy, role);
  const std::vector<sdk::ModelUnit> units =
      unit_steps ? model_units(model, params.size()) : std::vector<sdk::ModelUnit>{};
  strategy.call(strategy->setup({params, train.optimizer, micro_steps, info, token_counts, units}), "setup");
  sdk::PrecisionPolicy precision;
  strategy.call(strategy->precision(&precision), "precision");

  std::vector<torch::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  GradientHooks hooks(tensors, [&](std::size_t i) { strategy.call(strategy->gradient_ready(i), "gradient_ready"); });
  // Created after `hooks`: a parameter's gradient_ready comes before its unit's BackwardEnd.
  std::optional<UnitEvents> unit_events;
  if (unit_steps) {
    unit_events.emplace(strategy, units, tensors);
    if (model_record.descriptor->abi_minor >= 4) model.call(model->set_unit_hooks(&*unit_events), "set_unit_hooks");
  }
  // The model's loss with the root unit's events around it (a strategy that frees parameters gathers them).
  auto model_loss = [&](const sdk::Batch& batch, const sdk::OutputSubset* subset, torch::Tensor* loss) {
    if (unit_events) unit_events->root_forward_begin();
    model.call(model->loss(batch, subset, loss), "loss");
    if (unit_events) unit_events->root_forward_end();
  };

  double flops_per_token = 0.0;
  model.call(model->flops_per_token(train.seq_len, &flops_per_token), "flops_per_token");
  // The peak in the precision the strategy computes in: bf16 products run several times faster than fp32.
  const fs::path peak_cache = default_cache_dir() / "peak_flops.json";
  const PeakFlops peak = config.peak_flops > 0
                             ? PeakFlops{config.peak_flops, precision_name(precision.compute_dtype), "metrics.peak_flops"}
                             : cpu_peak_flops(threads, precision.compute_dtype, peak_cache);

  fs::create_directories(request.out_dir);
  const fs::path checkpoint_dir = request.out_dir / "checkpoint";
  std::int64_t start_step = 0;
  if (request.resume)
    if (auto step = load_checkpoint(checkpoint_dir, comm, model, strategy)) {
      start_step = *step;
      if (unit_steps) comm.take_stats();
      spdlog::info("resumed from {} at step {}", checkpoint_dir.string(), start_step);
    }
  MetricsLog log(request.out_dir / "metrics.jsonl", rank == 0, start_step);
  Timeline timeline(comm, config.trace, request.out_dir, start_step, train.steps);

  // The validation set is the first eval.batches global batches of val.bin, split over the computing
  // ranks as training batches are: the same sequences whatever the rank count, so val loss compares
  // across strategies and node counts.
  auto evaluate = [&]() {
    const auto eval_start = Clock::now();
    model.call(model->set_training(false), "set_training");
    torch::NoGradGuard no_grad;
    double sum = 0.0, count = 0.0;
    for (std::int64_t i = 0; computes && i < config.eval_batches; ++i)
      for (std::int64_t m = 0; m < micro_steps; ++m) {
        const data::Batch b = val_loader.batch(i, m);
        torch::Tensor loss;
        if (unit_events) unit_events->set_pass(false, m, true);
        model_loss({b.inputs.to(device), b.targets.to(device)}, nullptr, &loss);
        sum += loss.item<double>();
        count += 1;
      }
    model.call(model->set_training(true), "set_training");
    const double mean = mean_over_ranks(comm, sum, count);
    timeline.span(Phase::Eval, eval_start);
    return mean;
  };

  const std::int64_t tokens_per_step = train.batch_size * train.seq_len;
  RunTotals totals;
  double train_loss = std::nan(""), val_loss = std::nan("");
  model.call(model->set_training(true), "set_training");
  for (std::int64_t step = start_step; step < train.steps; ++step) {
    if (request.stop_after > 0 && step - start_step == request.stop_after) {
      spdlog::warn("stopping after {} steps as asked (--stop-after); the next run resumes from the last checkpoint",
                   request.stop_after);
      return nlohmann::json{{"status", "interrupted"}, {"step", step}};
    }
    const auto step_start = Clock::now();
    timeline.begin_step(step, step_start);
    StepTimes t;
    const sdk::StepContext ctx{step, learning_rate(step, train.steps, train.warmup_steps, train.optimizer.lr, train.min_lr)};
    strategy.call(strategy->begin_step(ctx), "begin_step");
    sdk::OutputVocabulary vocabulary;
    if (vocabulary_steps) {
      const data::Batch global = global_loader->batch(step, 0);
      strategy.call(strategy->output_vocabulary({step, global.inputs, global.targets}, &vocabulary),
                    "output_vocabulary");
      if (vocabulary.rows.defined()) {
        if (!info.supports_output_subset)
          throw ConfigError({config.file + ": strategy '" + config.strategy_name + "' restricts the softmax, but model '" +
                             config.model_name + "' does not support an output subset"});
        vocabulary.rows = vocabulary.rows.to(device);
      }
    }
    double loss_scale = 1.0;
    strategy.call(strategy->loss_scale(&loss_scale), "loss_scale");
    timeline.span(Phase::Prologue, step_start);
    double loss_sum = 0.0;
    for (std::int64_t m = 0; computes && m < micro_steps; ++m) {
      auto t0 = Clock::now();
      const data::Batch b = loader.batch(step, m);
      const sdk::Batch batch = keyed_batch(b, device, step, train.seed, sample_offset(batching, m));
      t.data += timeline.span(Phase::Data, t0);
      t0 = Clock::now();
      std::optional<sdk::OutputSubset> subset;
      if (vocabulary.rows.defined()) subset = restrict_targets(vocabulary, batch.targets, info.vocab_size, step);
      torch::Tensor loss;
      if (unit_events) unit_events->set_pass(true, m, m + 1 == micro_steps);
      {
        AutocastScope autocast(device.type(), precision.compute_dtype);
        model_loss(batch, subset ? &*subset : nullptr, &loss);
      }
      loss_sum += loss.item<double>();
      t.forward += timeline.span(Phase::Forward, t0);
      t0 = Clock::now();
      if (m + 1 == micro_steps) hooks.arm();
      if (unit_events) unit_events->backward_begin();
      (loss * (loss_scale / static_cast<double>(micro_steps))).backward();
      if (m + 1 == micro_steps) hooks.finish();
      if (unit_events) unit_events->backward_done();
      sync_device(device);
      t.backward += timeline.span(Phase::Backward, t0);
    }
    auto t0 = Clock::now();
    strategy.call(strategy->end_backward(), "end_backward");
    timeline.span(Phase::EndBackward, t0);
    const auto update_start = Clock::now();
    sdk::StepResult result;
    strategy.call(strategy->update(ctx, &result), "update");
    sync_device(device);
    timeline.span(Phase::Update, update_start);
    t.update = seconds_since(t0);
    const auto report_start = Clock::now();
    // The report waits for the slowest rank, as the next step's first collective would: its time is
    // part of the step, so tokens/s is what the job achieves, not what rank 0 alone would.
    const StepReport report =
        gather_step_report(comm, {computes, loss_sum, computes ? static_cast<double>(micro_steps) : 0.0,
                                  comm.take_stats()});
    timeline.span(Phase::Report, report_start);
    t.step = seconds_since(step_start);
    timeline.end_step(t.step);
    const CommStats& comm_stats = report.ranks[static_cast<std::size_t>(rank)].comm;
    t.comm = comm_stats.seconds;
    train_loss = report.mean_loss;
    if (!std::isfinite(train_loss))
      throw std::runtime_error("step " + std::to_string(step) + ": loss is " + std::to_string(train_loss) +
                               " (diverged); lower train.lr or enable gradient clipping");
    const bool last = step + 1 == train.steps;
    std::optional<double> step_val;
    if ((config.eval_every > 0 && (step + 1) % config.eval_every == 0) || last) step_val = val_loss = evaluate();

    StepRecord record{step,
                      train_loss,
                      ctx.lr,
                      result,
                      t,
                      comm_stats,
                      tokens_per_step / t.step,
                      flops_per_token * static_cast<double>(tokens_per_step) / group.count / t.step / peak.per_rank,
                      step_val,
                      plugin_metrics.take(),
                      report.ranks};
    log.write(record);
    totals.add(record, step == start_step && train.steps - start_step > 1);
    if (rank == 0 && (step % config.log_every == 0 || last))
      spdlog::info("step {:>5}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s{}", step + 1, train.steps, train_loss, ctx.lr,
                   record.tokens_per_sec, step_val ? fmt::format(" val {:.4f}", *step_val) : "");
    if ((config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0) || last) {
      const auto checkpoint_start = Clock::now();
      save_checkpoint(checkpoint_dir, rank, step + 1, model, strategy);
      timeline.span(Phase::Checkpoint, checkpoint_start);
      if (unit_steps) comm.take_stats();  // a sharding strategy's gathering for the checkpoint: not a step's traffic
    }
  }
  if (std::isnan(val_loss)) val_loss = evaluate();  // resumed after the last step

  YAML::Node resolved = YAML::Clone(config.resolved);
  resolved["model"] = to_yaml(model_services.options);
  resolved["model"]["name"] = config.model_name;
  resolved["strategy"] = to_yaml(strategy_services.options);
  resolved["strategy"]["name"] = config.strategy_name;
  RunFacts facts{info, config.model_name, config.strategy_name, world, threads, train.steps, peak,
                 flops_per_token, config.device, comm.backend()};
  nlohmann::json summary = make_summary(facts, totals, train_loss, val_loss, resolved);
  summary["step_breakdown"] = timeline.finish();
  check_mfu_against_peak(totals.mfu, peak, threads, peak_cache);
  if (rank == 0) {
    util::write_file_atomically(request.out_dir / "config.resolved.yaml", YAML::Dump(resolved) + "\n");
    util::write_file_atomically(request.out_dir / "summary.json", summary.dump(2) + "\n");
  }
  return summary;
}

}  // namespace gradsweep::host

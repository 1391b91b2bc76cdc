#include "train/trainer.hpp"

#include "comm/forensics/fault_injection.hpp"
#include "device/torch_cuda.hpp"
#include "config/option_schema.hpp"
#include "data/batch_loader.hpp"
#include "data/split_facts.hpp"
#include "data/token_split.hpp"
#include "weights/model_import.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_options.hpp"
#include "plugins/rank_duties.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"
#include "train/autocast_scope.hpp"
#include "train/checkpoint.hpp"
#include "train/gradient_hooks.hpp"
#include "train/kernel_profiler.hpp"
#include "train/lr_schedule.hpp"
#include "device/machine.hpp"
#include "device/matmul_precision.hpp"
#include "train/memory_reuse.hpp"
#include "train/metrics_log.hpp"
#include "train/model_agreement.hpp"
#include "train/output_vocabulary.hpp"
#include "train/rank_report.hpp"
#include "train/mlflow_log.hpp"
#include "train/tensorboard_log.hpp"
#include "train/timeline.hpp"
#include "train/unit_events.hpp"
#include "util/atomic_file.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace gradsweep::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GPU work is asynchronous: without a sync at a phase boundary its time would be charged to the next phase.
void sync_device(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// A token id the model has no embedding row for would index out of bounds deep inside LibTorch. Planning
// checks the same (host/experiment/plan/data_facts.hpp); this is for a cell file trained by hand.
void check_vocabulary(const data::TokenSplit& split, const sdk::ModelInfo& info, const config::CellConfig& config) {
  const data::SplitFacts facts = data::split_facts(split);
  if (facts.max_token >= info.vocab_size)
    throw config::ConfigError({config.file + ": " + facts.max_file.string() + " holds token id " +
                               std::to_string(facts.max_token) + " but model '" + config.model_name +
                               "' has vocab_size " + std::to_string(info.vocab_size) +
                               "; set model.vocab_size to the tokenizer's vocabulary (see dataset.json)"});
}

// The planner's check (plugins/plugin_declarations.hpp) on the job as it is, so that a hand-written cell is
// refused with the same words as a planned one, before the strategy is created.
plugins::PlanVerdict check_strategy_fits_job(const plugins::PluginRecord& strategy, const config::CellConfig& config,
                                             const comm::HostCommunicator& comm, const sdk::Options& options,
                                             const sdk::ModelInfo& info) {
  const plugins::PlannedJob job{
      comm.size(),       (comm.size() + comm.local_size() - 1) / std::max(1, comm.local_size()),
      comm.local_size(), comm.backend(),
      comm.features(),   config.device};
  const plugins::PlanVerdict verdict = plugins::check_strategy_plan(strategy, job, options, &info);
  // A cell file has no launcher keys: the job's ranks are the strategy's to fit. One line (not a
  // ConfigError's list), so that every rank's "[rank N] [error]" line carries the reason.
  const std::string key = verdict.about == "ranks" ? "strategy.name" : plugins::refusal_key(verdict, job.nodes);
  if (!verdict.refusal.empty()) throw std::runtime_error(config.file + ": " + key + ": " + verdict.refusal);
  return verdict;
}

// Sums (sum, count) over ranks and returns the mean (for reporting only: not the strategy's traffic).
double mean_over_ranks(comm::HostCommunicator& comm, double sum, double count) {
  torch::Tensor t = torch::tensor({sum, count}, torch::kDouble);
  if (comm.size() > 1) {
    sdk::check(comm.allreduce(t, sdk::ReduceOp::Sum));
    comm.take_stats();
  }
  return t[1].item<double>() > 0 ? t[0].item<double>() / t[1].item<double>() : std::nan("");
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
  services::PluginLogger logger;
};

PluginServices services_for(const config::CellConfig& config, const char* section,
                            const plugins::PluginRecord& record) {
  return {plugins::resolve_plugin_options(record, config, section),
          services::PluginLogger(std::string(section) + " " + record.name)};
}

// This rank's process: the device it asked for exists, its compute threads, and the seed. Returns the threads.
int prepare_rank(const config::CellConfig& config, comm::HostCommunicator& comm, const torch::Device& device) {
  spdlog::info("rank {} of {} is process {}", comm.rank(), comm.size(), static_cast<long>(::getpid()));
  if (device.is_cuda() && !torch::cuda::is_available())
    throw config::ConfigError({config.file + ": runtime.device: '" + config.device +
                               "' asked for, but this LibTorch build or machine has no CUDA device (" +
                               device::describe_torch_cuda() + ")"});
  const std::string precision = device::set_float32_matmul_precision(config.tf32);
  spdlog::info("float32 matmuls on {}: precision {} (TF32 {})", config.device, precision, config.tf32 ? "on" : "off");
  const int threads = device::choose_threads(static_cast<int>(config.threads), comm.local_size());
  const bool openblas = device::set_compute_threads(threads);
  spdlog::info("{} compute threads per rank ({} ranks on this node){}", threads, comm.local_size(),
               openblas ? ", OpenBLAS included" : "");
  if (!keep_freed_memory())
    spdlog::info("malloc's thresholds left as they are (tuned by the environment, or not glibc)");
  // Same seed on every rank: identical initial weights without a broadcast.
  torch::manual_seed(static_cast<std::uint64_t>(config.train.seed));
  return threads;
}

sdk::ModelInfo model_info(const plugins::ModelInstance& model) {
  sdk::ModelInfo info;
  model.call<&sdk::ModelAbi::info>(&info);
  return info;
}

// The model's parameters, checked against the configuration and against every other rank's.
std::vector<sdk::Parameter> checked_parameters(const plugins::ModelInstance& model, const sdk::ModelInfo& info,
                                               const config::CellConfig& config, comm::HostCommunicator& comm) {
  std::vector<sdk::Parameter> params;
  model.call<&sdk::ModelAbi::parameters>(&params);
  if (info.block_size > 0 && config.train.seq_len > info.block_size)
    throw config::ConfigError({config.file + ": train.seq_len: " + std::to_string(config.train.seq_len) +
                               " is longer than the model's block_size " + std::to_string(info.block_size)});
  check_models_agree(comm, params);
  return params;
}

// Each global batch is split over the ranks that compute (all of them, unless a server only serves).
data::BatchLoaderOptions batching_for(const config::TrainSettings& train, const ComputeGroup& group) {
  const std::int64_t micro = data::micro_batch_size(train.micro_batch, train.batch_size, group.count);
  return {train.batch_size, train.seq_len, micro, group.index, group.count};
}

std::vector<torch::Tensor> parameter_tensors(const std::vector<sdk::Parameter>& params) {
  std::vector<torch::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  return tensors;
}

// One cell's training on this rank, in the order it happens: set-up (the constructor), the steps (run),
// the summary. Members are declared in the order they are made, each from those above it, and destroyed
// in reverse: the hooks before the strategy, the plugins before the services they borrow.
class CellTraining {
 public:
  CellTraining(const TrainRequest& request, const plugins::PluginRegistry& registry, comm::HostCommunicator& comm);
  // Every remaining step, then the summary; {"status": "interrupted"} when --stop-after ends it early.
  nlohmann::json run();

 private:
  void set_up_strategy();
  // Sets up the strategy, then restores the checkpoint into it; returns the first step to run.
  std::int64_t set_up_and_resume();
  // One step; false when --stop-after ends the run before it.
  bool take_step(std::int64_t step);
  sdk::OutputVocabulary step_vocabulary(std::int64_t step);
  // Forward and backward of this rank's micro-batches; returns the sum of their losses.
  double forward_backward(std::int64_t step, const sdk::OutputVocabulary& vocabulary, double loss_scale, StepTimes& t);
  void model_loss(const sdk::Batch& batch, const sdk::OutputSubset* subset, torch::Tensor* loss);
  double evaluate();
  void log_step(const StepRecord& record, bool last);
  void checkpoint_after(std::int64_t step, bool last);
  // metrics.kernel_profile: starts the profiler before the step after the first, and after the last
  // profiled step (or the run's last) sums what it recorded by kernel class.
  void profile_before(std::int64_t step);
  void profile_after(std::int64_t step, double step_seconds);
  nlohmann::json write_summary();
  YAML::Node resolved_config() const;

  const TrainRequest& request_;
  const config::CellConfig& config_;
  const config::TrainSettings& train_;
  comm::HostCommunicator& comm_;
  const torch::Device device_;
  const int threads_;
  const plugins::PluginRecord& model_record_;
  const plugins::PluginRecord& strategy_record_;
  PluginServices model_services_;
  PluginServices strategy_services_;
  services::StepMetrics plugin_metrics_;
  plugins::ModelInstance model_;
  const sdk::ModelInfo info_;
  std::vector<sdk::Parameter> params_;
  const plugins::PlanVerdict plan_;
  plugins::StrategyInstance strategy_;
  // Whether this rank computes and the strategy hears unit events (rank_duties.hpp: from plan_).
  const plugins::RankDuties duties_;
  const ComputeGroup group_;
  const data::BatchLoaderOptions batching_;
  const data::BatchLoader loader_;
  const data::BatchLoader val_loader_;
  const std::int64_t micro_steps_;
  // A strategy that restricts the vocabulary (as it declares; see asks_for_vocabulary) gets the training
  // shard's counts, and each step the whole global batch (every rank reads it alike: the loader depends
  // only on the step). Other strategies pay for neither.
  const bool vocabulary_steps_;
  std::optional<data::BatchLoader> global_loader_;
  const bool unit_steps_;
  sdk::PrecisionPolicy precision_;
  std::optional<GradientHooks> hooks_;
  // Made after `hooks_`: a parameter's gradient_ready comes before its unit's BackwardEnd.
  std::optional<UnitEvents> unit_events_;
  double flops_per_token_ = 0.0;
  const fs::path peak_cache_;
  device::PeakFlops peak_;
  const fs::path checkpoint_dir_;
  std::optional<Resumed> resumed_;  // set by set_up_and_resume
  const std::int64_t start_step_;
  MetricsLog log_;
  TensorBoardLog tensorboard_;
  MlflowLog mlflow_;
  Timeline timeline_;
  std::optional<KernelProfiler> profiler_;
  std::int64_t profiled_steps_ = 0;
  double profiled_seconds_ = 0.0;
  std::optional<KernelProfile> kernel_profile_;
  RunTotals totals_;
  double train_loss_ = std::nan(""), val_loss_ = std::nan("");
};

CellTraining::CellTraining(const TrainRequest& request, const plugins::PluginRegistry& registry,
                           comm::HostCommunicator& comm)
    : request_(request),
      config_(request.config),
      train_(request.config.train),
      comm_(comm),
      device_(config_.device),
      threads_(prepare_rank(config_, comm, device_)),
      model_record_(registry.find(sdk::PluginKind::Model, config_.model_name)),
      strategy_record_(registry.find(sdk::PluginKind::Strategy, config_.strategy_name)),
      model_services_(services_for(config_, "model", model_record_)),
      strategy_services_(services_for(config_, "strategy", strategy_record_)),
      model_(model_record_, {model_services_.options, model_services_.logger, plugin_metrics_, comm, device_}),
      info_(model_info(model_)),
      params_(checked_parameters(model_, info_, config_, comm)),
      plan_(check_strategy_fits_job(strategy_record_, config_, comm, strategy_services_.options, info_)),
      strategy_(strategy_record_,
                {strategy_services_.options, strategy_services_.logger, plugin_metrics_, comm, device_}),
      duties_(plugins::rank_duties(strategy_, plan_, comm.rank(), comm.size())),
      group_(compute_group(comm, duties_.computes)),
      batching_(batching_for(train_, group_)),
      loader_(data::TokenSplit::open(config_.train_data), batching_),
      val_loader_(data::TokenSplit::open(config_.val_data), batching_),
      micro_steps_(loader_.micro_batches_per_step()),
      vocabulary_steps_(plugins::asks_for_vocabulary(strategy_record_, plan_)),
      unit_steps_(duties_.unit_events),
      peak_cache_(device::default_cache_dir() / "peak_flops.json"),
      checkpoint_dir_(request.out_dir / "checkpoint"),
      start_step_(set_up_and_resume()),
      log_(request.out_dir / "metrics.jsonl", comm.rank() == 0, start_step_),
      tensorboard_(request.out_dir, comm.rank() == 0 && config_.tensorboard, config_, comm.size()),
      mlflow_(request.out_dir, config_.mlflow_uri, comm.rank() == 0, resolved_config(), comm.size()),
      timeline_(comm, config_.trace, request.out_dir, start_step_, train_.steps) {}

// The data checked against the model, the strategy's set-up, then what the host adds around the model for
// it: gradient-ready hooks, unit events, and the peak FLOP/s in the precision the strategy computes in.
void CellTraining::set_up_strategy() {
  for (const data::BatchLoader* l : {&loader_, &val_loader_}) check_vocabulary(l->split(), info_, config_);
  // Before the strategy's set-up: a sharding strategy copies the parameters there.
  if (!config_.init_from.empty()) {
    weights::import_hf_weights(model_, config_.init_from);
    spdlog::info("model weights from {}", config_.init_from.string());
  }
  torch::Tensor token_counts;
  if (vocabulary_steps_) {
    global_loader_.emplace(data::TokenSplit::open(config_.train_data),
                           data::BatchLoaderOptions{train_.batch_size, train_.seq_len, train_.batch_size, 0, 1});
    token_counts = count_tokens(loader_.split(), info_.vocab_size);
  }
  const std::vector<sdk::ModelUnit> units =
      unit_steps_ ? model_units(model_, params_.size()) : std::vector<sdk::ModelUnit>{};
  strategy_.call<&sdk::StrategyAbi::setup>(
      sdk::StrategySetup{params_, train_.optimizer, micro_steps_, info_, token_counts, units});
  strategy_.call<&sdk::StrategyAbi::precision>(&precision_);

  const std::vector<torch::Tensor> tensors = parameter_tensors(params_);
  hooks_.emplace(tensors, [this](std::size_t i) { strategy_.call<&sdk::StrategyAbi::gradient_ready>(i); });
  if (unit_steps_) {
    unit_events_.emplace(strategy_, units, tensors);
    // A model built before 1.4 has no units: its whole forward is the root's.
    model_.call_if_present<&sdk::ModelAbi::set_unit_hooks>(&*unit_events_);
  }

  model_.call<&sdk::ModelAbi::flops_per_token>(train_.seq_len, &flops_per_token_);
  // bf16 products run several times faster than fp32.
  peak_ = config_.peak_flops > 0
              ? device::PeakFlops{config_.peak_flops, device::precision_name(precision_.compute_dtype),
                                  "metrics.peak_flops"}
              : device::cpu_peak_flops(threads_, precision_.compute_dtype, peak_cache_);
}

// The initialiser of start_step_: everything above it exists, and the metrics log and timeline need its answer.
std::int64_t CellTraining::set_up_and_resume() {
  set_up_strategy();
  fs::create_directories(request_.out_dir);
  if (!request_.resume) return 0;
  const auto start = Clock::now();
  resumed_ = load_checkpoint(checkpoint_dir_, comm_, model_, strategy_);
  if (!resumed_) return 0;
  if (unit_steps_) comm_.take_stats();
  const std::string resharded = resumed_->world_size == comm_.size() ? ""
                                                                     : fmt::format(", resharded from {} ranks to {}",
                                                                                   resumed_->world_size, comm_.size());
  spdlog::info("resumed from {} at step {}{} (read in {:.3f} s)", checkpoint_dir_.string(), resumed_->step, resharded,
               seconds_since(start));
  return resumed_->step;
}

nlohmann::json CellTraining::run() {
  model_.call<&sdk::ModelAbi::set_training>(true);
  for (std::int64_t step = start_step_; step < train_.steps; ++step)
    if (!take_step(step)) {
      tensorboard_.finish(std::nullopt);  // the next run resumes this session
      mlflow_.finish("KILLED");
      return nlohmann::json{{"status", "interrupted"}, {"step", step}};
    }
  if (std::isnan(val_loss_)) val_loss_ = evaluate();  // resumed after the last step
  nlohmann::json summary = write_summary();
  tensorboard_.finish(tensorboard::SessionStatus::Success);
  mlflow_.finish("FINISHED");  // after summary.json and trace.json, which it uploads
  return summary;
}

bool CellTraining::take_step(std::int64_t step) {
  if (request_.stop_after > 0 && step - start_step_ == request_.stop_after) {
    spdlog::warn("stopping after {} steps as asked (--stop-after); the next run resumes from the last checkpoint",
                 request_.stop_after);
    return false;
  }
  profile_before(step);
  const auto step_start = Clock::now();
  timeline_.begin_step(step, step_start);
  comm::fault_injection::enter_step(step);  // GRADSWEEP_INJECT_FAULT's clock (gradsweep check strategy)
  StepTimes t;
  const sdk::StepContext ctx{
      step, learning_rate(step, train_.steps, train_.warmup_steps, train_.optimizer.lr, train_.min_lr)};
  strategy_.call<&sdk::StrategyAbi::begin_step>(ctx);
  const sdk::OutputVocabulary vocabulary = step_vocabulary(step);
  double loss_scale = 1.0;
  strategy_.call<&sdk::StrategyAbi::loss_scale>(&loss_scale);
  timeline_.span(Phase::Prologue, step_start);
  const double loss_sum = forward_backward(step, vocabulary, loss_scale, t);
  auto t0 = Clock::now();
  strategy_.call<&sdk::StrategyAbi::end_backward>();
  timeline_.span(Phase::EndBackward, t0);
  const auto update_start = Clock::now();
  sdk::StepResult result;
  strategy_.call<&sdk::StrategyAbi::update>(ctx, &result);
  sync_device(device_);
  timeline_.span(Phase::Update, update_start);
  t.update = seconds_since(t0);
  const auto report_start = Clock::now();
  // The report waits for the slowest rank, as the next step's first collective would: its time is
  // part of the step, so tokens/s is what the job achieves, not what rank 0 alone would.
  const bool computes = duties_.computes;
  const comm::CommStats step_comm = comm_.take_stats();
  comm::GroupStats step_groups = comm_.take_group_stats();  // before the report's own take_stats drops them
  const StepReport report =
      gather_step_report(comm_, {computes, loss_sum, computes ? static_cast<double>(micro_steps_) : 0.0, step_comm});
  timeline_.span(Phase::Report, report_start);
  t.step = seconds_since(step_start);
  timeline_.end_step(t.step);
  profile_after(step, t.step);
  const comm::CommStats& comm_stats = report.ranks[static_cast<std::size_t>(comm_.rank())].comm;
  t.comm = comm_stats.seconds;
  train_loss_ = report.mean_loss;
  if (!std::isfinite(train_loss_))
    throw std::runtime_error("step " + std::to_string(step) + ": loss is " + std::to_string(train_loss_) +
                             " (diverged); lower train.lr or enable gradient clipping");
  const bool last = step + 1 == train_.steps;
  std::optional<double> step_val;
  if ((config_.eval_every > 0 && (step + 1) % config_.eval_every == 0) || last) step_val = val_loss_ = evaluate();

  const std::int64_t tokens_per_step = train_.batch_size * train_.seq_len;
  log_step({step, train_loss_, ctx.lr, result, t, comm_stats, tokens_per_step / t.step,
            flops_per_token_ * static_cast<double>(tokens_per_step) / group_.count / t.step / peak_.per_rank, step_val,
            plugin_metrics_.take(), report.ranks, std::move(step_groups)},
           last);
  checkpoint_after(step, last);
  return true;
}

sdk::OutputVocabulary CellTraining::step_vocabulary(std::int64_t step) {
  sdk::OutputVocabulary vocabulary;
  if (!vocabulary_steps_) return vocabulary;
  const data::Batch global = global_loader_->batch(step, 0);
  strategy_.call<&sdk::StrategyAbi::output_vocabulary>(sdk::StepBatch{step, global.inputs, global.targets},
                                                       &vocabulary);
  if (vocabulary.rows.defined()) {
    if (!info_.supports_output_subset)
      throw config::ConfigError({config_.file + ": strategy '" + config_.strategy_name +
                                 "' restricts the softmax, but model '" + config_.model_name +
                                 "' does not support an output subset"});
    vocabulary.rows = vocabulary.rows.to(device_);
  }
  return vocabulary;
}

double CellTraining::forward_backward(std::int64_t step, const sdk::OutputVocabulary& vocabulary, double loss_scale,
                                      StepTimes& t) {
  double loss_sum = 0.0;
  for (std::int64_t m = 0; duties_.computes && m < micro_steps_; ++m) {
    auto t0 = Clock::now();
    const data::Batch b = loader_.batch(step, m);
    const sdk::Batch batch = keyed_batch(b, device_, step, train_.seed, sample_offset(batching_, m));
    t.data += timeline_.span(Phase::Data, t0);
    t0 = Clock::now();
    std::optional<sdk::OutputSubset> subset;
    if (vocabulary.rows.defined()) subset = restrict_targets(vocabulary, batch.targets, info_.vocab_size, step);
    torch::Tensor loss;
    if (unit_events_) unit_events_->set_pass(true, m, m + 1 == micro_steps_);
    {
      AutocastScope autocast(device_.type(), precision_.compute_dtype);
      model_loss(batch, subset ? &*subset : nullptr, &loss);
    }
    loss_sum += loss.item<double>();
    t.forward += timeline_.span(Phase::Forward, t0);
    t0 = Clock::now();
    if (m + 1 == micro_steps_) hooks_->arm();
    if (unit_events_) unit_events_->backward_begin();
    (loss * (loss_scale / static_cast<double>(micro_steps_))).backward();
    if (m + 1 == micro_steps_) hooks_->finish();
    if (unit_events_) unit_events_->backward_done();
    sync_device(device_);
    t.backward += timeline_.span(Phase::Backward, t0);
  }
  return loss_sum;
}

// The model's loss with the root unit's events around it (a strategy that frees parameters gathers them).
void CellTraining::model_loss(const sdk::Batch& batch, const sdk::OutputSubset* subset, torch::Tensor* loss) {
  if (unit_events_) unit_events_->root_forward_begin();
  model_.call<&sdk::ModelAbi::loss>(batch, subset, loss);
  if (unit_events_) unit_events_->root_forward_end();
}

// The validation set is the first eval.batches global batches of val.bin, split over the computing
// ranks as training batches are: the same sequences whatever the rank count, so val loss compares
// across strategies and node counts.
double CellTraining::evaluate() {
  const auto eval_start = Clock::now();
  model_.call<&sdk::ModelAbi::set_training>(false);
  torch::NoGradGuard no_grad;
  double sum = 0.0, count = 0.0;
  for (std::int64_t i = 0; duties_.computes && i < config_.eval_batches; ++i)
    for (std::int64_t m = 0; m < micro_steps_; ++m) {
      const data::Batch b = val_loader_.batch(i, m);
      torch::Tensor loss;
      if (unit_events_) unit_events_->set_pass(false, m, true);
      model_loss({b.inputs.to(device_), b.targets.to(device_)}, nullptr, &loss);
      sum += loss.item<double>();
      count += 1;
    }
  model_.call<&sdk::ModelAbi::set_training>(true);
  const double mean = mean_over_ranks(comm_, sum, count);
  timeline_.span(Phase::Eval, eval_start);
  return mean;
}

void CellTraining::log_step(const StepRecord& record, bool last) {
  const nlohmann::json line = log_.write(record);
  tensorboard_.write_step(record.step, line);
  mlflow_.write_step(line);
  totals_.add(record, record.step == start_step_ && train_.steps - start_step_ > 1);
  if (comm_.rank() == 0 && (record.step % config_.log_every == 0 || last))
    spdlog::info("step {:>5}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s{}", record.step + 1, train_.steps, record.loss,
                 record.lr, record.tokens_per_sec, record.val_loss ? fmt::format(" val {:.4f}", *record.val_loss) : "");
}

void CellTraining::checkpoint_after(std::int64_t step, bool last) {
  if (!((config_.checkpoint_every > 0 && (step + 1) % config_.checkpoint_every == 0) || last)) return;
  const auto checkpoint_start = Clock::now();
  save_checkpoint(checkpoint_dir_, comm_, step + 1, model_, strategy_);
  timeline_.span(Phase::Checkpoint, checkpoint_start);
  // What a checkpoint costs is the user's to weigh against checkpoint.every (and what benchmarks read).
  spdlog::info("checkpoint step-{} written in {:.3f} s", step + 1, seconds_since(checkpoint_start));
  if (unit_steps_) comm_.take_stats();  // a sharding strategy's gathering for the checkpoint: not a step's traffic
}

void CellTraining::profile_before(std::int64_t step) {
  if (config_.kernel_profile > 0 && step == start_step_ + 1) profiler_.emplace(config::is_cuda_device(config_.device));
}

void CellTraining::profile_after(std::int64_t step, double step_seconds) {
  if (!profiler_) return;
  profiled_seconds_ += step_seconds;
  if (++profiled_steps_ < config_.kernel_profile && step + 1 < train_.steps) return;
  const std::vector<KernelRecord> records = profiler_->stop();
  kernel_profile_ = summarize_kernels(records, profiler_->source(), profiled_steps_,
                                      profiled_seconds_ / static_cast<double>(profiled_steps_));
  profiler_.reset();
  if (comm_.rank() != 0) return;
  spdlog::info("{}", kernel_profile_->table());
  util::write_file_atomically(request_.out_dir / "kernel-profile.json", kernel_profile_->to_json().dump(2) + "\n");
}

// summary.json and config.resolved.yaml (rank 0 writes them; every rank returns the summary).
// config.resolved.yaml's content: the host's sections with defaults, the plugins' options as resolved.
YAML::Node CellTraining::resolved_config() const {
  YAML::Node resolved = YAML::Clone(config_.resolved);
  resolved["model"] = config::to_yaml(model_services_.options);
  resolved["model"]["name"] = config_.model_name;
  if (!config_.init_from.empty()) resolved["model"]["init_from"] = config_.init_from.string();
  resolved["strategy"] = config::to_yaml(strategy_services_.options);
  resolved["strategy"]["name"] = config_.strategy_name;
  return resolved;
}

nlohmann::json CellTraining::write_summary() {
  const YAML::Node resolved = resolved_config();
  RunFacts facts{info_, config_.model_name, config_.strategy_name, comm_.size(),    threads_,         train_.steps,
                 peak_, flops_per_token_,   config_.device,        comm_.backend(), vocabulary_steps_};
  nlohmann::json summary = make_summary(facts, totals_, train_loss_, val_loss_, resolved);
  summary["float32_matmul_precision"] = device::float32_matmul_precision();  // as LibTorch reports it
  summary["step_breakdown"] = timeline_.finish();
  summary["trace"] = timeline_.cost();
  if (kernel_profile_) summary["kernel_profile"] = kernel_profile_->to_json();
  // A run that changed size is never silently compared with fixed-size runs: it says so.
  if (resumed_ && resumed_->world_size != comm_.size())
    summary["resharded"] = {{"at_step", resumed_->step}, {"from_world_size", resumed_->world_size}};
  device::check_mfu_against_peak(totals_.mfu, vocabulary_steps_, peak_, threads_, peak_cache_);
  if (comm_.rank() == 0) {
    util::write_file_atomically(request_.out_dir / "config.resolved.yaml", YAML::Dump(resolved) + "\n");
    util::write_file_atomically(request_.out_dir / "summary.json", summary.dump(2) + "\n");
  }
  return summary;
}

}  // namespace

nlohmann::json train_cell(const TrainRequest& request, const plugins::PluginRegistry& registry,
                          comm::HostCommunicator& comm) {
  CellTraining cell(request, registry, comm);
  return cell.run();
}

}  // namespace gradsweep::train

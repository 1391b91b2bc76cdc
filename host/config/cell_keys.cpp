#include "config/cell_keys.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace gradsweep::config {
namespace {

using sdk::OptionType;

// Bounds (docs/configuration.md, "Bounds"). Sizes stop at 2^20 so that the products the trainer and the
// batch loader form (batch_size x seq_len tokens, 2^40 at most) stay far inside int64.
constexpr double kMaxCount = 1e9;     // steps, and "every N steps"
constexpr double kMaxSize = 1 << 20;  // sequences per batch, tokens per sequence
constexpr double kMaxSeed = 1e15;
constexpr double kMaxThreads = 1024;  // and at most kThreadsPerCore x this machine's (check_threads_fit_machine)
constexpr std::int64_t kThreadsPerCore = 4;
const ValueRange kPositive{0, HUGE_VAL, true};
const ValueRange kNonNegative{0, HUGE_VAL};
const ValueRange kBeta{0, 1, false, true};

// The field at the end of `Path` (CellConfig::train, then TrainSettings::steps, ...) in `config`.
template <auto... Path>
auto& field_of(CellConfig& config) {
  return (config.*....*Path);
}

template <auto... Path>
using FieldType = std::remove_cvref_t<decltype(field_of<Path...>(std::declval<CellConfig&>()))>;

template <class T>
constexpr OptionType option_type() {
  if constexpr (std::is_same_v<T, bool>)
    return OptionType::Bool;
  else if constexpr (std::is_integral_v<T>)
    return OptionType::Int;
  else if constexpr (std::is_floating_point_v<T>)
    return OptionType::Float;
  else {
    static_assert(std::is_same_v<T, std::string>, "a cell key's field is a bool, an integer, a number or a string");
    return OptionType::String;
  }
}

template <auto... Path>
void store(CellConfig& config, const sdk::Options& section, const char* key) {
  auto& field = field_of<Path...>(config);
  using T = FieldType<Path...>;
  if constexpr (std::is_same_v<T, bool>)
    field = section.flag(key);
  else if constexpr (std::is_integral_v<T>)
    field = section.integer(key);
  else if constexpr (std::is_floating_point_v<T>)
    field = section.number(key);
  else
    field = section.text(key);
}

// A key whose value is the field at `Path`; its type is the field's. `default_value` nullptr: required.
template <auto... Path>
CellKey key(const char* name, const char* default_value, const char* unit, const char* help, ValueRange range = {},
            const char* choices = nullptr) {
  return {{{name, option_type<FieldType<Path...>>(), default_value, help}, range, choices, unit}, &store<Path...>};
}

// A key the parser reads itself (CellKey::store).
CellKey read_by_parser(const char* name, OptionType type, const char* default_value, const char* help,
                       const char* choices = nullptr) {
  return {{{name, type, default_value, help}, {}, choices, ""}, nullptr};
}

void store_optimizer_kind(CellConfig& config, const sdk::Options& section, const char* key) {
  config.train.optimizer.kind =
      section.text(key) == "sgd" ? sdk::OptimizerSpec::Kind::SGD : sdk::OptimizerSpec::Kind::AdamW;
}

using TS = TrainSettings;
using Opt = sdk::OptimizerSpec;
using C = CellConfig;

std::map<std::string, std::vector<CellKey>> make_cell_keys() {
  std::map<std::string, std::vector<CellKey>> keys;
  keys["data"] = {
      read_by_parser("train", OptionType::String, nullptr,
                     "training token shards: a .bin file, a directory of them, a glob, or a list of these"),
      read_by_parser("val", OptionType::String, nullptr,
                     "validation token shards: a .bin file, a directory of them, a glob, or a list of these")};
  keys["train"] = {
      key<&C::train, &TS::steps>("steps", nullptr, "steps", "optimizer steps", {1, kMaxCount}),
      key<&C::train, &TS::batch_size>("batch_size", nullptr, "sequences", "sequences per step, all ranks together",
                                      {1, kMaxSize}),
      key<&C::train, &TS::micro_batch>("micro_batch", "0", "sequences",
                                       "sequences per rank per forward (0 = batch_size / ranks)", {0, kMaxSize}),
      key<&C::train, &TS::seq_len>("seq_len", nullptr, "tokens", "tokens per sequence", {1, kMaxSize}),
      {{{"optimizer", OptionType::String, "adamw", "adamw or sgd"}, {}, "adamw|sgd", ""}, &store_optimizer_kind},
      key<&C::train, &TS::optimizer, &Opt::lr>("lr", "6e-4", "", "peak learning rate", kPositive),
      key<&C::train, &TS::min_lr>("min_lr", "0", "", "learning rate at the end of the cosine decay", kNonNegative),
      key<&C::train, &TS::warmup_steps>("warmup_steps", "0", "steps", "linear warmup steps", {0, kMaxCount}),
      key<&C::train, &TS::optimizer, &Opt::weight_decay>("weight_decay", "0.0", "",
                                                         "decoupled weight decay (matrices only)", kNonNegative),
      key<&C::train, &TS::optimizer, &Opt::beta1>("beta1", "0.9", "", "AdamW beta1", kBeta),
      key<&C::train, &TS::optimizer, &Opt::beta2>("beta2", "0.95", "", "AdamW beta2", kBeta),
      key<&C::train, &TS::optimizer, &Opt::eps>("eps", "1e-8", "", "AdamW epsilon", kNonNegative),
      key<&C::train, &TS::optimizer, &Opt::momentum>("momentum", "0.9", "", "SGD momentum", {0, 1}),
      key<&C::train, &TS::optimizer, &Opt::grad_clip>("grad_clip", "1.0", "", "max global gradient norm (0 = off)",
                                                      kNonNegative),
      key<&C::train, &TS::seed>("seed", "1234", "", "seed for initialisation and dropout", {0, kMaxSeed})};
  keys["eval"] = {
      key<&C::eval_every>("every", "0", "steps", "evaluate every N steps (0 = only at the end)", {0, kMaxCount}),
      key<&C::eval_batches>("batches", "8", "batches", "validation batches per evaluation", {1, 1e6})};
  keys["checkpoint"] = {key<&C::checkpoint_every>("every", "0", "steps",
                                                  "checkpoint every N steps (0 = only at the end)", {0, kMaxCount})};
  keys["metrics"] = {
      key<&C::log_every>("log_every", "10", "steps", "log a line every N steps", {1, kMaxCount}),
      key<&C::peak_flops>("peak_flops", "0", "FLOP/s", "peak FLOP/s for MFU (0 = measure sgemm once and cache)",
                          kNonNegative),
      key<&C::trace>("trace", "sampled", "",
                     "timeline of the steps in trace.json: sampled (first measured, middle, last), all or off", {},
                     "sampled|all|off"),
      key<&C::kernel_profile>(
          "kernel_profile", "0", "steps",
          "profile this many steps after the first with LibTorch's profiler and split their time by kernel class "
          "(GEMM, attention, elementwise/norm, optimizer, communication, other) into kernel-profile.json (0 = off)",
          {0, kMaxCount}),
      key<&C::tensorboard>("tensorboard", "true", "",
                           "TensorBoard event files in tensorboard/ beside metrics.jsonl (rank 0): every metric per "
                           "step, validation, and the cell's sweep axes for the HParams dashboard")};
  keys["tracking"] = {key<&C::mlflow_uri>(
      "mlflow", "", "",
      "MLflow tracking server (http://HOST:PORT): each cell is a run there, in the experiment named after the "
      "sweep, with its config, metrics per step and files (rank 0; empty = off)")};
  keys["runtime"] = {
      key<&C::threads>("threads", "0", "threads",
                       "LibTorch threads per rank (0 = cores / ranks on the node); at most 4 x the hardware threads "
                       "of the machine that validates it",
                       {0, kMaxThreads}),
      key<&C::device>("device", "cpu", "", "cpu, cuda or cuda:N"),
      read_by_parser("tf32", OptionType::String, "auto",
                     "TF32 tensor cores for float32 matmuls on CUDA: auto (on for a CUDA device), on or off; the "
                     "resolved config records which",
                     "auto|on|off"),
      key<&C::comm>("comm", "auto", "", "communicator backend: auto, local, mpi or nccl", {}, kCommChoiceList),
      key<&C::check_collectives>("check_collectives", "false", "",
                                 "check that all ranks issue the same collectives (debug)"),
      key<&C::comm_timeout>("comm_timeout", "600", "s",
                            "seconds a rank may wait in one communication call before the job is ended as hung (0 "
                            "= never; GRADSWEEP_COMM_TIMEOUT overrides)",
                            kNonNegative)};
  return keys;
}

}  // namespace

const std::map<std::string, std::vector<CellKey>>& cell_keys() {
  static const std::map<std::string, std::vector<CellKey>> keys = make_cell_keys();
  return keys;
}

const std::map<std::string, std::vector<HostOption>>& host_options() {
  static const std::map<std::string, std::vector<HostOption>> options = [] {
    std::map<std::string, std::vector<HostOption>> out;
    for (const auto& [section, keys] : cell_keys())
      for (const CellKey& k : keys) out[section].push_back(k.option);
    return out;
  }();
  return options;
}

void store_cell_keys(CellConfig& config, const std::map<std::string, sdk::Options>& sections) {
  for (const auto& [section, keys] : cell_keys())
    for (const CellKey& k : keys)
      if (k.store != nullptr) k.store(config, sections.at(section), k.option.spec.key);
}

void check_threads_fit_machine(std::int64_t threads, const YAML::Node& where, const std::string& key,
                               Diagnostics& diag) {
  // Thousands of OpenMP threads per rank end in "libgomp: Out of memory" or, under a memory limit, in a
  // hang: the bound is a multiple of what this machine has, which oversubscription beyond is never useful.
  // Asked once: planning checks every cell of a sweep, and each ask reads the CPU set afresh.
  static const std::int64_t hardware = std::thread::hardware_concurrency();
  if (hardware > 0 && threads > kThreadsPerCore * hardware && threads <= kMaxThreads)  // beyond: out of range
    diag.error(where, key,
               std::to_string(threads) + " threads per rank is more than " + std::to_string(kThreadsPerCore) +
                   " x the " + std::to_string(hardware) + " hardware threads of this machine");
}

}  // namespace gradsweep::config

#include "config/cell_config.hpp"

#include "config/duplicate_keys.hpp"
#include "config/key_path.hpp"
#include "config/option_schema.hpp"
#include "config/yaml_guard.hpp"

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace gradsweep::config {
namespace fs = std::filesystem;
using sdk::OptionSpec;
using sdk::OptionType;

namespace {

// The host's own keys, section by section, each number with its range (see docs/configuration.md,
// "Bounds"). Defaults are YAML text; nullptr = required (checked below). Sizes stop at 2^20 so that the
// products the trainer and the batch loader form (batch_size x seq_len tokens, 2^40 at most) stay far
// inside int64.
constexpr double kMaxCount = 1e9;     // steps, and "every N steps"
constexpr double kMaxSize = 1 << 20;  // sequences per batch, tokens per sequence
constexpr double kMaxSeed = 1e15;
constexpr double kMaxThreads = 1024;  // and at most kThreadsPerCore x this machine's (below)
constexpr std::int64_t kThreadsPerCore = 4;
const ValueRange kPositive{0, HUGE_VAL, true};
const ValueRange kNonNegative{0, HUGE_VAL};
const ValueRange kBeta{0, 1, false, true};

const std::map<std::string, std::vector<HostOption>>& host_schema() {
  static const std::map<std::string, std::vector<HostOption>> schema{
      {"data",
       {{{"train", OptionType::String, nullptr,
          "training token shards: a .bin file, a directory of them, a glob, or a list of these"}},
        {{"val", OptionType::String, nullptr,
          "validation token shards: a .bin file, a directory of them, a glob, or a list of these"}}}},
      {"train",
       {{{"steps", OptionType::Int, nullptr, "optimizer steps"}, {1, kMaxCount}},
        {{"batch_size", OptionType::Int, nullptr, "sequences per step, all ranks together"}, {1, kMaxSize}},
        {{"micro_batch", OptionType::Int, "0", "sequences per rank per forward (0 = batch_size / ranks)"},
         {0, kMaxSize}},
        {{"seq_len", OptionType::Int, nullptr, "tokens per sequence"}, {1, kMaxSize}},
        {{"optimizer", OptionType::String, "adamw", "adamw or sgd"}, {}, "adamw|sgd"},
        {{"lr", OptionType::Float, "6e-4", "peak learning rate"}, kPositive},
        {{"min_lr", OptionType::Float, "0", "learning rate at the end of the cosine decay"}, kNonNegative},
        {{"warmup_steps", OptionType::Int, "0", "linear warmup steps"}, {0, kMaxCount}},
        {{"weight_decay", OptionType::Float, "0.0", "decoupled weight decay (matrices only)"}, kNonNegative},
        {{"beta1", OptionType::Float, "0.9", "AdamW beta1"}, kBeta},
        {{"beta2", OptionType::Float, "0.95", "AdamW beta2"}, kBeta},
        {{"eps", OptionType::Float, "1e-8", "AdamW epsilon"}, kNonNegative},
        {{"momentum", OptionType::Float, "0.9", "SGD momentum"}, {0, 1}},
        {{"grad_clip", OptionType::Float, "1.0", "max global gradient norm (0 = off)"}, kNonNegative},
        {{"seed", OptionType::Int, "1234", "seed for initialisation and dropout"}, {0, kMaxSeed}}}},
      {"eval",
       {{{"every", OptionType::Int, "0", "evaluate every N steps (0 = only at the end)"}, {0, kMaxCount}},
        {{"batches", OptionType::Int, "8", "validation batches per evaluation"}, {1, 1e6}}}},
      {"checkpoint",
       {{{"every", OptionType::Int, "0", "checkpoint every N steps (0 = only at the end)"}, {0, kMaxCount}}}},
      {"metrics",
       {{{"log_every", OptionType::Int, "10", "log a line every N steps"}, {1, kMaxCount}},
        {{"peak_flops", OptionType::Float, "0", "peak FLOP/s for MFU (0 = measure sgemm once and cache)"},
         kNonNegative},
        {{"trace", OptionType::String, "sampled",
          "timeline of the steps in trace.json: sampled (first measured, middle, last), all or off"},
         {},
         "sampled|all|off"},
        {{"kernel_profile", OptionType::Int, "0",
          "profile this many steps after the first with LibTorch's profiler and split their time by kernel class "
          "(GEMM, attention, elementwise/norm, optimizer, communication, other) into kernel-profile.json (0 = off)"},
         {0, kMaxCount}},
        {{"tensorboard", OptionType::Bool, "true",
          "TensorBoard event files in tensorboard/ beside metrics.jsonl (rank 0): every metric per step, validation, "
          "and the cell's sweep axes for the HParams dashboard"}}}},
      {"tracking",
       {{{"mlflow", OptionType::String, "",
          "MLflow tracking server (http://HOST:PORT): each cell is a run there, in the experiment named after the "
          "sweep, with its config, metrics per step and files (rank 0; empty = off)"}}}},
      {"runtime",
       {{{"threads", OptionType::Int, "0",
          "LibTorch threads per rank (0 = cores / ranks on the node); at most 4 x the hardware threads of the "
          "machine that validates it"},
         {0, kMaxThreads}},
        {{"device", OptionType::String, "cpu", "cpu, cuda or cuda:N"}},
        {{"tf32", OptionType::String, "auto",
          "TF32 tensor cores for float32 matmuls on CUDA: auto (on for a CUDA device), on or off; the resolved "
          "config records which"},
         {},
         "auto|on|off"},
        {{"comm", OptionType::String, "auto", "communicator backend: auto, local, mpi or nccl"}, {}, kCommChoiceList},
        {{"check_collectives", OptionType::Bool, "false", "check that all ranks issue the same collectives (debug)"}},
        {{"comm_timeout", OptionType::Float, "600",
          "seconds a rank may wait in one communication call before the job is ended as hung (0 = never; "
          "GRADSWEEP_COMM_TIMEOUT overrides)"},
         kNonNegative}}},
  };
  return schema;
}

const std::set<std::string> kPluginSections{"model", "strategy"};

fs::path resolve_path(const fs::path& base, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() || base.empty() ? path : base / path;
}

// data.train and data.val may be a list of paths, which the schema's string type would refuse: a list of
// (non-empty) strings is handed to the schema as a string, and read as a list by data_paths(). Anything
// else goes to the schema as written, to be refused with its position.
bool is_path_list(const YAML::Node& value) {
  if (!value || !value.IsSequence() || value.size() == 0) return false;
  for (const auto& item : value)
    if (!item.IsScalar() || item.Scalar().empty()) return false;
  return true;
}

YAML::Node data_section_for_schema(const YAML::Node& data) {
  if (!data || !data.IsMap()) return data;
  YAML::Node copy = YAML::Clone(data);
  std::vector<std::string> lists;
  for (const auto& item : copy)
    if (item.first.IsScalar() && is_path_list(item.second)) lists.push_back(item.first.Scalar());
  for (const std::string& key : lists) copy[key] = copy[key][0].Scalar();
  return copy;
}

std::vector<fs::path> data_paths(const YAML::Node& value, const fs::path& base_dir) {
  std::vector<fs::path> paths;
  if (is_path_list(value))
    for (const auto& item : value) paths.push_back(resolve_path(base_dir, item.Scalar()));
  else
    paths.push_back(resolve_path(base_dir, value.Scalar()));
  return paths;
}

}  // namespace

const std::map<std::string, std::vector<HostOption>>& host_options() { return host_schema(); }

const std::set<std::string>& host_keys_of(const std::string& section) {
  static const std::set<std::string> model{"name", "init_from"}, other{"name"};
  return section == "model" ? model : other;
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

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || !is_key_path(assignment.substr(0, eq)))
    throw std::runtime_error("--set '" + assignment + "': expected key.path=value");
  const std::string key = assignment.substr(0, eq);
  set_key_path(root, key, parse_config_yaml(assignment.substr(eq + 1), "--set " + key));
}

CellConfig parse_cell_config(const std::string& yaml_text, const std::string& file_name, const fs::path& base_dir,
                             const std::vector<std::string>& overrides) {
  return parse_cell_tree(parse_config_yaml(yaml_text, file_name), file_name, base_dir, overrides);
}

namespace {

// The tree as the cell's root, with the command line's --set applied; refuses anything but a mapping and
// names unknown sections.
void read_root(CellConfig& config, const YAML::Node& root, const std::vector<std::string>& overrides,
               Diagnostics& diag) {
  config.root = root;
  if (!config.root || config.root.IsNull()) config.root = YAML::Node(YAML::NodeType::Map);
  check_duplicate_keys(config.root, diag);  // before --set, which would replace only the first of two
  if (!config.root.IsMap()) {               // before --set too, which cannot set a key in anything else
    diag.error(config.root, "(top level)", "expected a mapping");
    diag.throw_if_any();
  }
  for (const auto& o : overrides) apply_override(config.root, o);
  const auto& schema = host_schema();
  for (const auto& item : config.root) {
    const std::string key = item.first.as<std::string>();
    if (!schema.count(key) && !kPluginSections.count(key) && key != "plugins")
      diag.error(item.first, key,
                 "unknown section; known: data, train, eval, checkpoint, metrics, runtime, model, strategy, plugins");
  }
}

// The host's sections, typed and with defaults (also into config.resolved); values out of range go to
// `out_of_range`, reported with the problems found after the types (a value out of range is still a value).
std::map<std::string, sdk::Options> resolve_host_sections(CellConfig& config, Diagnostics& diag,
                                                          Diagnostics& out_of_range) {
  std::map<std::string, sdk::Options> host;
  config.resolved = YAML::Node(YAML::NodeType::Map);
  for (const auto& [section, specs] : host_schema()) {
    const YAML::Node node = section == "data" ? data_section_for_schema(config.root[section]) : config.root[section];
    host[section] = resolve_options(node, section, specs_of(specs), {}, diag);
    check_ranges(config.root[section], section, specs, host[section], out_of_range);
    config.resolved[section] = to_yaml(host[section]);
    for (const auto& [s, range, choices] : specs)
      if (s.default_value == nullptr && !host[section].has(s.key))
        diag.error(config.root[section] ? config.root[section] : config.root, section + "." + s.key,
                   std::string("required key missing (") + s.help + ")");
  }
  return host;
}

// model.name and strategy.name (the default strategy when there is no strategy section), and plugins.paths.
void read_plugin_choices(CellConfig& config, const fs::path& base_dir, Diagnostics& diag) {
  for (const std::string section : {"model", "strategy"}) {
    const YAML::Node node = config.root[section];
    if (section == "strategy" && !node) {
      config.strategy_name = kDefaultStrategy;
      continue;
    }
    if (!node || !node.IsMap() || !node["name"] || !node["name"].IsScalar()) {
      diag.error(node ? node : config.root, section + ".name", "required: the " + section + " plugin to use");
      continue;
    }
    (section == "model" ? config.model_name : config.strategy_name) = node["name"].Scalar();
  }
  if (const YAML::Node from =
          config.root["model"] && config.root["model"].IsMap() ? config.root["model"]["init_from"] : YAML::Node()) {
    if (!from.IsScalar() || from.Scalar().empty())
      diag.error(from, "model.init_from", "expected a directory (a Hugging Face model: model.safetensors)");
    else if (config.init_from = resolve_path(base_dir, from.Scalar()); !fs::is_directory(config.init_from))
      diag.error(from, "model.init_from", "no such directory: " + config.init_from.string());
  }
  if (const YAML::Node plugins = config.root["plugins"]) {
    const YAML::Node paths = plugins.IsMap() ? plugins["paths"] : YAML::Node();  // [] on a scalar throws
    if (!plugins.IsMap() || (paths && !paths.IsSequence()))
      diag.error(plugins, "plugins.paths", "expected a list of directories");
    else if (paths)
      for (const auto& p : paths) {
        if (p.IsScalar())
          config.plugin_paths.push_back(resolve_path(base_dir, p.Scalar()));
        else
          diag.error(p, "plugins.paths", "expected a directory");
      }
  }
}

// data and train: the shards, the steps and batches, the optimizer.
void read_training(CellConfig& config, std::map<std::string, sdk::Options>& host, const fs::path& base_dir) {
  const sdk::Options& t = host["train"];
  config.train_data = data_paths(config.root["data"]["train"], base_dir);
  config.val_data = data_paths(config.root["data"]["val"], base_dir);
  for (const char* key : {"train", "val"})
    if (is_path_list(config.root["data"][key])) config.resolved["data"][key] = YAML::Clone(config.root["data"][key]);
  config.train.steps = t.integer("steps");
  config.train.batch_size = t.integer("batch_size");
  config.train.micro_batch = t.integer("micro_batch");
  config.train.seq_len = t.integer("seq_len");
  config.train.warmup_steps = t.integer("warmup_steps");
  config.train.min_lr = t.number("min_lr");
  config.train.seed = t.integer("seed");
  auto& opt = config.train.optimizer;
  const std::string kind = t.text("optimizer");
  opt.kind = kind == "sgd" ? sdk::OptimizerSpec::Kind::SGD : sdk::OptimizerSpec::Kind::AdamW;
  opt.lr = t.number("lr");
  opt.beta1 = t.number("beta1");
  opt.beta2 = t.number("beta2");
  opt.eps = t.number("eps");
  opt.weight_decay = t.number("weight_decay");
  opt.momentum = t.number("momentum");
  opt.grad_clip = t.number("grad_clip");
}

// eval, checkpoint, metrics and runtime (threads checked against this machine after the ranges' problems).
void read_run_settings(CellConfig& config, std::map<std::string, sdk::Options>& host, Diagnostics& diag,
                       Diagnostics& out_of_range) {
  config.eval_every = host["eval"].integer("every");
  config.eval_batches = host["eval"].integer("batches");
  config.checkpoint_every = host["checkpoint"].integer("every");
  config.log_every = host["metrics"].integer("log_every");
  config.peak_flops = host["metrics"].number("peak_flops");
  config.trace = host["metrics"].text("trace");
  config.kernel_profile = host["metrics"].integer("kernel_profile");
  config.tensorboard = host["metrics"].flag("tensorboard");
  config.mlflow_uri = host["tracking"].text("mlflow");
  if (config.kernel_profile >= config.train.steps && config.kernel_profile > 0)
    diag.error(config.root["metrics"]["kernel_profile"], "metrics.kernel_profile",
               "profiles the steps after the first (a warm-up), so it must be below train.steps (" +
                   std::to_string(config.train.steps) + ")");
  config.threads = host["runtime"].integer("threads");
  config.device = host["runtime"].text("device");
  config.comm = host["runtime"].text("comm");
  config.comm_timeout = host["runtime"].number("comm_timeout");
  check_threads_fit_machine(config.threads, config.root["runtime"]["threads"], "runtime.threads", diag);
  diag.append(out_of_range);
  const bool cuda = is_cuda_device(config.device);
  if (config.device != "cpu" && !cuda)
    diag.error(config.root["runtime"]["device"], "runtime.device", "expected cpu, cuda or cuda:N");
  const std::string tf32 = host["runtime"].text("tf32");
  if (tf32 == "on" && !cuda)
    diag.error(config.root["runtime"]["tf32"], "runtime.tf32",
               "on needs a CUDA device, and runtime.device is " + config.device + " (CPU matmuls have no TF32)");
  config.tf32 = tf32 == "on" || (tf32 == "auto" && cuda);
  config.resolved["runtime"]["tf32"] = config.tf32 ? "on" : "off";
}

}  // namespace

CellConfig parse_cell_tree(const YAML::Node& root, const std::string& file_name, const fs::path& base_dir,
                           const std::vector<std::string>& overrides) {
  CellConfig config;
  config.file = file_name;
  Diagnostics diag(file_name);
  read_root(config, root, overrides, diag);
  Diagnostics out_of_range(file_name);
  std::map<std::string, sdk::Options> host = resolve_host_sections(config, diag, out_of_range);
  read_plugin_choices(config, base_dir, diag);
  if (!diag.empty()) {
    diag.append(out_of_range);
    diag.throw_if_any();
  }
  read_training(config, host, base_dir);
  read_run_settings(config, host, diag, out_of_range);
  diag.throw_if_any();
  return config;
}

CellConfig load_cell_config(const fs::path& file, const std::vector<std::string>& overrides) {
  std::ifstream in(file);
  if (!in) throw ConfigError({file.string() + ": cannot open configuration file"});
  std::stringstream text;
  text << in.rdbuf();
  return parse_cell_config(text.str(), file.string(), file.parent_path(), overrides);
}

}  // namespace gradsweep::config

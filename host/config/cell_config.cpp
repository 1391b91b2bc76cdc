#include "config/cell_config.hpp"

#include "config/option_schema.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace gradsweep::host {
namespace fs = std::filesystem;
using sdk::OptionSpec;
using sdk::OptionType;

namespace {

// The host's own keys, section by section. Defaults are YAML text; nullptr = required (checked below).
const std::map<std::string, std::vector<OptionSpec>>& host_schema() {
  static const std::map<std::string, std::vector<OptionSpec>> schema{
      {"data",
       {{"train", OptionType::String, nullptr, "training token shard (.bin)"},
        {"val", OptionType::String, nullptr, "validation token shard (.bin)"}}},
      {"train",
       {{"steps", OptionType::Int, nullptr, "optimizer steps"},
        {"batch_size", OptionType::Int, nullptr, "sequences per step, all ranks together"},
        {"micro_batch", OptionType::Int, "0", "sequences per rank per forward (0 = batch_size / ranks)"},
        {"seq_len", OptionType::Int, nullptr, "tokens per sequence"},
        {"optimizer", OptionType::String, "adamw", "adamw or sgd"},
        {"lr", OptionType::Float, "6e-4", "peak learning rate"},
        {"min_lr", OptionType::Float, "0", "learning rate at the end of the cosine decay"},
        {"warmup_steps", OptionType::Int, "0", "linear warmup steps"},
        {"weight_decay", OptionType::Float, "0.0", "decoupled weight decay (matrices only)"},
        {"beta1", OptionType::Float, "0.9", "AdamW beta1"},
        {"beta2", OptionType::Float, "0.95", "AdamW beta2"},
        {"eps", OptionType::Float, "1e-8", "AdamW epsilon"},
        {"momentum", OptionType::Float, "0.9", "SGD momentum"},
        {"grad_clip", OptionType::Float, "1.0", "max global gradient norm (0 = off)"},
        {"seed", OptionType::Int, "1234", "seed for initialisation and dropout"}}},
      {"eval",
       {{"every", OptionType::Int, "0", "evaluate every N steps (0 = only at the end)"},
        {"batches", OptionType::Int, "8", "validation batches per evaluation"}}},
      {"checkpoint", {{"every", OptionType::Int, "0", "checkpoint every N steps (0 = only at the end)"}}},
      {"metrics",
       {{"log_every", OptionType::Int, "10", "log a line every N steps"},
        {"peak_flops", OptionType::Float, "0", "peak FLOP/s for MFU (0 = measure sgemm once and cache)"}}},
      {"runtime",
       {{"threads", OptionType::Int, "0", "LibTorch threads per rank (0 = cores / ranks on the node)"},
        {"device", OptionType::String, "cpu", "cpu, cuda or cuda:N"},
        {"comm", OptionType::String, "auto", "communicator backend: auto, local, mpi or nccl"},
        {"check_collectives", OptionType::Bool, "false", "check that all ranks issue the same collectives (debug)"},
        {"comm_timeout", OptionType::Float, "600",
         "seconds a rank may wait in one communication call before the job is ended as hung (0 = never; "
         "GRADSWEEP_COMM_TIMEOUT overrides)"}}},
  };
  return schema;
}

const std::set<std::string> kPluginSections{"model", "strategy"};

fs::path resolve_path(const fs::path& base, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() || base.empty() ? path : base / path;
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::runtime_error("--set '" + assignment + "': expected key.path=value");
  const std::string key = assignment.substr(0, eq);
  const YAML::Node value = YAML::Load(assignment.substr(eq + 1));
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  // yaml-cpp nodes are handles: walk with fresh handles, never reassign one (that would alias nodes).
  std::function<void(YAML::Node, std::size_t)> set = [&](YAML::Node node, std::size_t i) {
    if (i + 1 == parts.size()) {
      node[parts[i]] = value;
      return;
    }
    if (!node[parts[i]] || !node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    set(node[parts[i]], i + 1);
  };
  set(root, 0);
}

CellConfig parse_cell_config(const std::string& yaml_text, const std::string& file_name, const fs::path& base_dir,
                             const std::vector<std::string>& overrides) {
  CellConfig config;
  config.file = file_name;
  try {
    config.root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError({file_name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                       ": " + e.msg});
  }
  if (!config.root || config.root.IsNull()) config.root = YAML::Node(YAML::NodeType::Map);
  for (const auto& o : overrides) apply_override(config.root, o);

  Diagnostics diag(file_name);
  if (!config.root.IsMap()) {
    diag.error(config.root, "(top level)", "expected a mapping");
    diag.throw_if_any();
  }
  const auto& schema = host_schema();
  for (const auto& item : config.root) {
    const std::string key = item.first.as<std::string>();
    if (!schema.count(key) && !kPluginSections.count(key) && key != "plugins")
      diag.error(item.first, key,
                 "unknown section; known: data, train, eval, checkpoint, metrics, runtime, model, strategy, plugins");
  }

  std::map<std::string, sdk::Options> host;
  config.resolved = YAML::Node(YAML::NodeType::Map);
  for (const auto& [section, specs] : schema) {
    host[section] = resolve_options(config.root[section], section, specs, {}, diag);
    config.resolved[section] = to_yaml(host[section]);
    for (const auto& s : specs)
      if (s.default_value == nullptr && !host[section].has(s.key))
        diag.error(config.root[section] ? config.root[section] : config.root, section + "." + s.key,
                   std::string("required key missing (") + s.help + ")");
  }
  for (const std::string section : {"model", "strategy"}) {
    const YAML::Node node = config.root[section];
    if (section == "strategy" && !node) {
      config.strategy_name = "single";
      continue;
    }
    if (!node || !node.IsMap() || !node["name"] || !node["name"].IsScalar()) {
      diag.error(node ? node : config.root, section + ".name", "required: the " + section + " plugin to use");
      continue;
    }
    (section == "model" ? config.model_name : config.strategy_name) = node["name"].Scalar();
  }
  if (const YAML::Node plugins = config.root["plugins"]) {
    const YAML::Node paths = plugins["paths"];
    if (!plugins.IsMap() || (paths && !paths.IsSequence()))
      diag.error(plugins, "plugins.paths", "expected a list of directories");
    else if (paths)
      for (const auto& p : paths) config.plugin_paths.push_back(resolve_path(base_dir, p.as<std::string>()));
  }
  diag.throw_if_any();

  const sdk::Options& t = host["train"];
  config.train_data = resolve_path(base_dir, host["data"].text("train"));
  config.val_data = resolve_path(base_dir, host["data"].text("val"));
  config.train.steps = t.integer("steps");
  config.train.batch_size = t.integer("batch_size");
  config.train.micro_batch = t.integer("micro_batch");
  config.train.seq_len = t.integer("seq_len");
  config.train.warmup_steps = t.integer("warmup_steps");
  config.train.min_lr = t.number("min_lr");
  config.train.seed = t.integer("seed");
  auto& opt = config.train.optimizer;
  const std::string kind = t.text("optimizer");
  if (kind != "adamw" && kind != "sgd") diag.error(config.root["train"]["optimizer"], "train.optimizer", "expected adamw or sgd");
  opt.kind = kind == "sgd" ? sdk::OptimizerSpec::Kind::SGD : sdk::OptimizerSpec::Kind::AdamW;
  opt.lr = t.number("lr");
  opt.beta1 = t.number("beta1");
  opt.beta2 = t.number("beta2");
  opt.eps = t.number("eps");
  opt.weight_decay = t.number("weight_decay");
  opt.momentum = t.number("momentum");
  opt.grad_clip = t.number("grad_clip");
  config.eval_every = host["eval"].integer("every");
  config.eval_batches = host["eval"].integer("batches");
  config.checkpoint_every = host["checkpoint"].integer("every");
  config.log_every = host["metrics"].integer("log_every");
  config.peak_flops = host["metrics"].number("peak_flops");
  config.threads = host["runtime"].integer("threads");
  config.device = host["runtime"].text("device");
  config.comm = host["runtime"].text("comm");
  config.comm_timeout = host["runtime"].number("comm_timeout");
  if (config.comm_timeout < 0)
    diag.error(config.root["runtime"]["comm_timeout"], "runtime.comm_timeout", "must be >= 0 (0 turns the watchdog off)");

  auto positive = [&](const char* section, const char* key, std::int64_t v) {
    if (v <= 0) diag.error(config.root[section][key], std::string(section) + "." + key, "must be positive");
  };
  positive("train", "steps", config.train.steps);
  positive("train", "batch_size", config.train.batch_size);
  positive("train", "seq_len", config.train.seq_len);
  if (config.train.micro_batch < 0) diag.error(config.root["train"]["micro_batch"], "train.micro_batch", "must be >= 0");
  if (opt.lr <= 0) diag.error(config.root["train"]["lr"], "train.lr", "must be positive");
  if (config.eval_batches <= 0) diag.error(config.root["eval"]["batches"], "eval.batches", "must be positive");
  if (config.device != "cpu" && config.device.rfind("cuda", 0) != 0)
    diag.error(config.root["runtime"]["device"], "runtime.device", "expected cpu, cuda or cuda:N");
  if (!is_comm_choice(config.comm))
    diag.error(config.root["runtime"]["comm"], "runtime.comm", "expected " + std::string(kCommChoices) + ", got '" + config.comm + "'");
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

sdk::Options resolve_plugin_options(const CellConfig& config, const std::string& section,
                                    const std::vector<sdk::OptionSpec>& specs) {
  Diagnostics diag(config.file);
  sdk::Options options = resolve_options(config.root[section], section, specs, {"name"}, diag);
  diag.throw_if_any();
  return options;
}

}  // namespace gradsweep::host

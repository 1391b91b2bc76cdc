#include "plugins/plugin_declarations.hpp"

#include "plugins/plugin_instance.hpp"
#include "plugins/sized_struct.hpp"

namespace gradsweep::plugins {
namespace {

std::string who(const PluginRecord& record) {
  return std::string(sdk::to_string(record.kind)) + " '" + record.name + "'";
}

// The descriptor as far as the plugin wrote it (and its minor has fields): later fields null.
sdk::PluginDescriptor descriptor_of(const PluginRecord& record) {
  return read_sized(record.descriptor, record.descriptor->abi_minor, who(record));
}

std::string rank_range(const sdk::StrategyCapabilities& caps) {
  const std::string min = std::to_string(caps.min_ranks), max = std::to_string(caps.max_ranks);
  if (caps.max_ranks == caps.min_ranks) return "exactly " + min + (caps.min_ranks == 1 ? " rank" : " ranks");
  if (caps.max_ranks == 0) return min + " or more ranks";
  return min + " to " + max + " ranks";
}

// The declared capabilities against the facts; "" when they fit.
PlanVerdict check_declared(const PluginRecord& record, const sdk::StrategyCapabilities& caps,
                           const sdk::PlanFacts& facts) {
  const std::string who = "strategy '" + record.name + "'";
  const auto world = static_cast<std::uint32_t>(facts.world_size);
  if (world < caps.min_ranks || (caps.max_ranks != 0 && world > caps.max_ranks))
    return {who + " runs on " + rank_range(caps) + ", but the job has " + std::to_string(facts.world_size) +
                " (nodes x ranks_per_node = " + std::to_string(facts.nodes) + " x " +
                std::to_string(facts.ranks_per_node) + ")",
            "ranks"};
  if (const sdk::CommFeatures missing = caps.required_features & ~facts.backend_features; missing != 0)
    return {who + " needs " + sdk::feature_names(missing) + " from the communicator, which the " + facts.backend +
                " backend does not offer on " + std::to_string(facts.world_size) + " ranks",
            "backend"};
  const std::string device = facts.device;
  const sdk::DeviceKinds kind = device.rfind("cuda", 0) == 0 ? sdk::kCuda : sdk::kCpu;
  if ((caps.devices & kind) == 0) return {who + " does not run on device '" + device + "'", "device"};
  return {};
}

}  // namespace

std::vector<sdk::OptionSpec> option_specs(const PluginRecord& record) {
  const sdk::PluginDescriptor& d = *record.descriptor;
  return {d.options, d.options + d.option_count};
}

config::OptionChoices option_choices(const PluginRecord& record) {
  const sdk::PluginDescriptor d = descriptor_of(record);
  config::OptionChoices choices(d.option_count);
  if (d.option_choices != nullptr)
    for (std::uint32_t i = 0; i < d.option_count; ++i)
      if (d.option_choices[i] != nullptr) choices[i] = d.option_choices[i];
  return choices;
}

std::optional<sdk::StrategyCapabilities> declared_capabilities(const PluginRecord& record) {
  const sdk::PluginDescriptor d = descriptor_of(record);
  if (d.capabilities == nullptr) return std::nullopt;
  return read_sized(d.capabilities, d.abi_minor, who(record));
}

bool asks_for_vocabulary(const PluginRecord& record, const PlanVerdict& verdict) {
  if (verdict.capabilities) return verdict.capabilities->restricts_vocabulary;
  return plugin_has<&sdk::StrategyAbi::output_vocabulary>(record);
}

PlanVerdict check_strategy_plan(const PluginRecord& record, const sdk::PlanFacts& facts) {
  PlanVerdict verdict;
  verdict.computing_ranks = facts.world_size;
  const std::optional<sdk::StrategyCapabilities> declared = declared_capabilities(record);
  verdict.capabilities = declared;
  const sdk::PluginDescriptor d = descriptor_of(record);
  if (d.check_plan != nullptr) {
    sdk::PlanAnswer answer;
    if (declared) answer.capabilities = *declared;
    const sdk::Status status = d.check_plan(&facts, &answer);
    if (!status.ok || !answer.refusal.empty())
      return {status.ok ? answer.refusal : status.message, answer.about, verdict.computing_ranks, verdict.capabilities};
    // A plugin may have assigned a whole answer (or capabilities) of its own, older size: read what it wrote.
    check_struct_size<sdk::PlanAnswer>(answer.struct_size, d.abi_minor, who(record));
    if (answer.computing_ranks < 0 || answer.computing_ranks > facts.world_size)
      return {"strategy '" + record.name + "': check_plan says " + std::to_string(answer.computing_ranks) +
                  " ranks compute, but the job has " + std::to_string(facts.world_size) + " (a bug in the plugin)",
              "", verdict.computing_ranks, verdict.capabilities};
    if (answer.computing_ranks > 0) verdict.computing_ranks = answer.computing_ranks;
    verdict.answered = true;
    if (declared) verdict.capabilities = read_sized(&answer.capabilities, d.abi_minor, who(record), *declared);
  }
  if (verdict.capabilities) {
    PlanVerdict refused = check_declared(record, *verdict.capabilities, facts);
    if (!refused.refusal.empty()) {
      refused.computing_ranks = verdict.computing_ranks;
      refused.capabilities = verdict.capabilities;
      return refused;
    }
  }
  return verdict;
}

PlanVerdict check_strategy_plan(const PluginRecord& record, const PlannedJob& job, const sdk::Options& options,
                                const sdk::ModelInfo* model) {
  sdk::PlanFacts facts;
  facts.world_size = job.world_size;
  facts.nodes = job.nodes;
  facts.ranks_per_node = job.ranks_per_node;
  facts.options = &options;
  facts.model = model;
  facts.backend = job.backend.c_str();
  facts.backend_features = job.backend_features;
  facts.device = job.device.c_str();
  return check_strategy_plan(record, facts);
}

std::string refusal_key(const PlanVerdict& verdict, int nodes) {
  const std::string& about = verdict.about;
  if (about == "ranks") return nodes > 1 ? "launcher.nodes" : "launcher.ranks_per_node";
  if (about == "backend") return "runtime.comm";
  if (about == "device") return "runtime.device";
  if (about == "model") return "model.name";
  return about.empty() ? "strategy.name" : "strategy." + about;
}

}  // namespace gradsweep::plugins

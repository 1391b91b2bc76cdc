#include "plugins/plugin_declarations.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gradsweep::host {
namespace {

// Whether the plugin's descriptor has the SDK 1.4 field at [offset, offset + size).
bool reaches(const sdk::PluginDescriptor& d, std::size_t offset, std::size_t size) {
  return d.abi_minor >= 4 && d.struct_size >= offset + size;
}

#define GRADSWEEP_DESCRIPTOR_HAS(d, field) \
  reaches((d), offsetof(sdk::PluginDescriptor, field), sizeof(sdk::PluginDescriptor::field))

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

OptionChoices option_choices(const PluginRecord& record) {
  const sdk::PluginDescriptor& d = *record.descriptor;
  OptionChoices choices(d.option_count);
  if (GRADSWEEP_DESCRIPTOR_HAS(d, option_choices) && d.option_choices != nullptr)
    for (std::uint32_t i = 0; i < d.option_count; ++i)
      if (d.option_choices[i] != nullptr) choices[i] = d.option_choices[i];
  return choices;
}

std::optional<sdk::StrategyCapabilities> declared_capabilities(const PluginRecord& record) {
  const sdk::PluginDescriptor& d = *record.descriptor;
  if (!GRADSWEEP_DESCRIPTOR_HAS(d, capabilities) || d.capabilities == nullptr) return std::nullopt;
  // Every field of 1.4's StrategyCapabilities, the first version: later ones only append.
  constexpr std::size_t kFirstSize = offsetof(sdk::StrategyCapabilities, devices) + sizeof(sdk::DeviceKinds);
  const std::uint32_t size = d.capabilities->struct_size;
  if (size < kFirstSize) return std::nullopt;
  sdk::StrategyCapabilities caps;
  std::memcpy(&caps, d.capabilities, std::min<std::size_t>(size, sizeof caps));
  caps.struct_size = sizeof caps;
  return caps;
}

bool asks_for_vocabulary(const PluginRecord& record, const PlanVerdict& verdict) {
  if (verdict.capabilities) return verdict.capabilities->restricts_vocabulary;
  return record.descriptor->abi_minor >= 2;
}

PlanVerdict check_strategy_plan(const PluginRecord& record, const sdk::PlanFacts& facts) {
  PlanVerdict verdict;
  verdict.computing_ranks = facts.world_size;
  const std::optional<sdk::StrategyCapabilities> declared = declared_capabilities(record);
  verdict.capabilities = declared;
  const sdk::PluginDescriptor& d = *record.descriptor;
  if (GRADSWEEP_DESCRIPTOR_HAS(d, check_plan) && d.check_plan != nullptr) {
    sdk::PlanAnswer answer;
    if (declared) answer.capabilities = *declared;
    const sdk::Status status = d.check_plan(&facts, &answer);
    if (!status.ok || !answer.refusal.empty())
      return {status.ok ? answer.refusal : status.message, answer.about, verdict.computing_ranks, verdict.capabilities};
    if (answer.computing_ranks < 0 || answer.computing_ranks > facts.world_size)
      return {"strategy '" + record.name + "': check_plan says " + std::to_string(answer.computing_ranks) +
                  " ranks compute, but the job has " + std::to_string(facts.world_size) + " (a bug in the plugin)",
              "", verdict.computing_ranks, verdict.capabilities};
    if (answer.computing_ranks > 0) verdict.computing_ranks = answer.computing_ranks;
    if (declared) verdict.capabilities = answer.capabilities;
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

std::string refusal_key(const PlanVerdict& verdict, int nodes) {
  const std::string& about = verdict.about;
  if (about == "ranks") return nodes > 1 ? "launcher.nodes" : "launcher.ranks_per_node";
  if (about == "backend") return "runtime.comm";
  if (about == "device") return "runtime.device";
  if (about == "model") return "model.name";
  return about.empty() ? "strategy.name" : "strategy." + about;
}

}  // namespace gradsweep::host

#pragma once
// The binary contract between the gradsweep host and a plugin library.
//
// Each plugin exports exactly one C symbol, `gradsweep_plugin` (a Boost.DLL alias), pointing to a
// function that returns a static PluginDescriptor. The host reads the descriptor's leading fields
// (size, ABI version) and the build fingerprint *before* calling anything else in the library, and
// refuses the plugin with a message naming both sides' versions when they do not match. Only then does
// it call `create`. Libraries stay loaded for the life of the process.
//
// Evolution: within one ABI major, fields are only appended to the descriptor and virtual methods are
// only appended to the interfaces; each append bumps the minor. A plugin built against an older minor
// loads in a newer host; a plugin built against a newer minor is refused by an older host.
//
// Part of the SDK's core, which needs no LibTorch: the fingerprint of a build is filled in by
// build_fingerprint.hpp, which reads LibTorch's version.
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/status.hpp>

#include <cstdint>

namespace gradsweep::sdk {

inline constexpr std::uint32_t kAbiMajor = 1;
// 1.1: Communicator::with_algorithm, recv_any; Strategy::role.
// 1.2: Strategy::output_vocabulary; StrategySetup::model and ::token_counts.
// 1.3: Batch::sample_ids, ::step, ::seed; sample_dropout.hpp (keyed, split-independent dropout);
//      Communicator::Algorithm::Hierarchical.
// 1.4: model units: ModelAbi::units, ::set_unit_hooks and UnitHooks; StrategySetup::units;
//      StrategyAbi::unit_event, ::hold_parameters (what `fsdp` gathers and frees around each unit);
//      Communicator::reduce_scatter_async, ::allgather_async (what `zero2` overlaps with backward);
//      capabilities.hpp (StrategyCapabilities, check_plan, option choices: PluginDescriptor's appended
//      capabilities, check_plan, option_choices); Communicator::features.
// 1.5: ModelAbi::export_weights and ExportedWeights (`gradsweep export`).
// 1.6: ModelAbi::import_weights (`model.init_from`: a Hugging Face directory as the starting weights) and
//      ModelAbi::logits.
// 1.7: StrategyAbi::load_resharded and SavedStates; StrategyCapabilities::reshards (resuming a checkpoint
//      at another world size).
// 1.8: Communicator::split and ::group, sdk::Group and GroupKind, kGroups (sub-communicators: `hsdp`).
// 1.9: StrategyCapabilities::unit_events and ::deterministic (declared, no longer a RankRole answer or
//      assumed); PlanAnswer::computing_ranks is the one declaration of the ranks that compute.
inline constexpr std::uint32_t kAbiMinor = 9;
inline constexpr const char* kEntryPointName = "gradsweep_plugin";

struct PluginContext;  // services.hpp: what a plugin receives when it is created (it holds LibTorch types)

enum class PluginKind : std::uint32_t { Model = 1, Strategy = 2 };

inline const char* to_string(PluginKind kind) {
  switch (kind) {
    case PluginKind::Model: return "model";
    case PluginKind::Strategy: return "strategy";
  }
  return "unknown";
}

// What the plugin was compiled against. torch::Tensor and std::string cross the boundary, so the
// LibTorch major.minor and the libstdc++ string ABI must equal the host's; the rest is reported.
struct BuildFingerprint {
  std::uint32_t torch_major;
  std::uint32_t torch_minor;
  std::uint32_t cxx11_abi;     // _GLIBCXX_USE_CXX11_ABI
  std::uint32_t cuda_version;  // e.g. 12040 for 12.4; 0 = built without CUDA
  std::uint32_t nccl_version;  // e.g. 22105; 0 = built without NCCL
  char compiler[64];
};

struct PluginDescriptor {
  std::uint32_t struct_size;  // sizeof(PluginDescriptor) of the SDK the plugin was built with
  std::uint32_t abi_major;
  std::uint32_t abi_minor;
  PluginKind kind;
  const char* name;     // what experiments call it: "ring", "gpt2"
  const char* version;  // the plugin's own version
  const char* summary;  // one line for `gradsweep plugins`
  BuildFingerprint build;
  const OptionSpec* options;  // the configuration keys it accepts
  std::uint32_t option_count;
  // Returns a ModelAbi* or StrategyAbi* (by kind) as void*, or nullptr with *status set.
  void* (*create)(const PluginContext* context, Status* status) noexcept;
  void (*destroy)(void* object) noexcept;
  // ---- ABI 1.4 (the host reads them only when abi_minor >= 4 and struct_size covers them) ----
  const StrategyCapabilities* capabilities;  // nullptr: nothing declared (and for models)
  // Refuses a cell (answer->refusal, or an error Status) and says how many ranks compute; nullptr: none.
  Status (*check_plan)(const PlanFacts* facts, PlanAnswer* answer) noexcept;
  // option_count entries parallel to `options`: "a|b|c", or nullptr for any value; nullptr: no choices.
  const char* const* option_choices;
};

using DescribePluginFn = const PluginDescriptor*();

}  // namespace gradsweep::sdk

#pragma once
// What a plugin declares about itself (SDK 1.4), so that the host judges a cell before anything runs
// instead of guessing from names and option keys:
//
//   - StrategyCapabilities: the world sizes a strategy runs on, whether it reproduces `single`, whether it
//     restricts the vocabulary, whether its ranks agree, what it needs from the communicator and device;
//   - check_plan: a hook the planner (and `gradsweep train`, at start-up) calls with the cell's facts, to
//     refuse an infeasible cell in the plugin's own words and to say how many ranks compute;
//   - OptionDecl: an option with the values it accepts, which the host then checks with file:line:column.
//
// A strategy class declares them as static members, all optional; the export macro finds them:
//
//   class Mine : public gradsweep::sdk::Strategy {
//    public:
//     static constexpr auto kCapabilities =
//         gradsweep::sdk::StrategyCapabilities{}.ranks(2, 0).exact().agreeing().needs(sdk::kPointToPoint);
//     static void check_plan(const gradsweep::sdk::PlanFacts& facts, gradsweep::sdk::PlanAnswer& answer);
//     ...
//   };
//
// check_plan refuses by throwing sdk::Error or by setting answer.refusal. Plugins that declare nothing
// (and every plugin built against SDK 1.0-1.3) get the host's old behaviour (docs/plugins.md).
#include <gradsweep/sdk/options.hpp>

#include <cstdint>
#include <string>

namespace gradsweep::sdk {

struct ModelInfo;  // model.hpp, which includes services.hpp, which includes this header

// What a communicator offers beyond the collectives every backend has (Communicator::features).
using CommFeatures = std::uint64_t;
inline constexpr CommFeatures kPointToPoint = 1u << 0;           // send / recv between ranks
inline constexpr CommFeatures kRecvAny = 1u << 1;                // recv_any (a parameter server's inbox)
inline constexpr CommFeatures kRingAlgorithm = 1u << 2;          // with_algorithm(Algorithm::Ring)
inline constexpr CommFeatures kHierarchicalAlgorithm = 1u << 3;  // with_algorithm(Algorithm::Hierarchical)
inline constexpr CommFeatures kAsyncCollectives = 1u << 4;       // allreduce_async that overlaps computation
inline constexpr CommFeatures kGroups = 1u << 5;                 // split and group (ABI 1.8): sub-communicators

// "recv_any, Ring algorithm": the features of `features`, for messages.
inline std::string feature_names(CommFeatures features) {
  static constexpr struct {
    CommFeatures bit;
    const char* name;
  } kNames[] = {{kPointToPoint, "point-to-point send/recv"},     {kRecvAny, "recv_any"},
                {kRingAlgorithm, "the Ring algorithm"},          {kHierarchicalAlgorithm, "the Hierarchical algorithm"},
                {kAsyncCollectives, "asynchronous collectives"}, {kGroups, "sub-communicators (split, group)"}};
  std::string text;
  for (const auto& n : kNames)
    if ((features & n.bit) != 0) text += (text.empty() ? "" : ", ") + std::string(n.name);
  return text;
}

// The devices a strategy runs on.
using DeviceKinds = std::uint32_t;
inline constexpr DeviceKinds kCpu = 1u << 0;
inline constexpr DeviceKinds kCuda = 1u << 1;
inline constexpr DeviceKinds kAnyDevice = kCpu | kCuda;

// Plain data, struct_size first: later minors append fields, and the host reads only what the plugin's
// struct_size covers. The chained setters are for writing a constant in C++17 (no designated initializers).
struct StrategyCapabilities {
  std::uint32_t struct_size = sizeof(StrategyCapabilities);
  std::uint32_t min_ranks = 1;
  std::uint32_t max_ranks = 0;         // 0 = any number; `single`: 1
  bool synchronous_exact = false;      // reproduces `single` at the same global batch in fp32
  bool restricts_vocabulary = false;   // overrides Strategy::on_output_vocabulary; only then does the trainer
                                       // count the shard's tokens and ask it every step
  bool ranks_agree = false;            // parameters are identical on every rank after each step
  CommFeatures required_features = 0;  // needed whatever the options (option-dependent needs: check_plan)
  DeviceKinds devices = kAnyDevice;
  // ---- ABI 1.7 ----
  bool reshards = false;  // resumes from a checkpoint of another world size (Strategy::on_load_resharded)
  // ---- ABI 1.9 ----
  // Acts on model units: the host sends it unit events (UnitEvent), hold_parameters and the model's units
  // in StrategySetup, and lends the model its unit hooks. Replaces RankRole::unit_events, which the host
  // reads only from plugins built before 1.9.
  bool unit_events = false;
  // The same seed and cell give the same losses, bit for bit, run after run. An asynchronous strategy
  // (whose updates land in the order messages arrive) declares false; the conformance kit then skips
  // its `deterministic` property, naming the declaration. Plugins built before 1.9 count as deterministic.
  bool deterministic = true;

  constexpr StrategyCapabilities ranks(std::uint32_t min, std::uint32_t max) const {
    StrategyCapabilities c = *this;
    c.min_ranks = min;
    c.max_ranks = max;
    return c;
  }
  constexpr StrategyCapabilities exact(bool value = true) const {
    StrategyCapabilities c = *this;
    c.synchronous_exact = value;
    return c;
  }
  constexpr StrategyCapabilities vocabulary(bool value = true) const {
    StrategyCapabilities c = *this;
    c.restricts_vocabulary = value;
    return c;
  }
  constexpr StrategyCapabilities agreeing(bool value = true) const {
    StrategyCapabilities c = *this;
    c.ranks_agree = value;
    return c;
  }
  constexpr StrategyCapabilities needs(CommFeatures features) const {
    StrategyCapabilities c = *this;
    c.required_features |= features;
    return c;
  }
  constexpr StrategyCapabilities on(DeviceKinds kinds) const {
    StrategyCapabilities c = *this;
    c.devices = kinds;
    return c;
  }
  constexpr StrategyCapabilities resharding(bool value = true) const {
    StrategyCapabilities c = *this;
    c.reshards = value;
    return c;
  }
  constexpr StrategyCapabilities units(bool value = true) const {
    StrategyCapabilities c = *this;
    c.unit_events = value;
    return c;
  }
  constexpr StrategyCapabilities deterministic_runs(bool value = true) const {
    StrategyCapabilities c = *this;
    c.deterministic = value;
    return c;
  }
};

// A cell as the planner sees it, before any process starts (and as `gradsweep train` sees it at start-up).
struct PlanFacts {
  std::uint32_t struct_size = sizeof(PlanFacts);
  int world_size = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  const Options* options = nullptr;   // the strategy's options, validated and with defaults filled in
  const ModelInfo* model = nullptr;   // the model as its plugin resolves it; nullptr when not known
  const char* backend = "";           // "local", "mpi", "nccl"
  CommFeatures backend_features = 0;  // what that backend offers on world_size ranks
  const char* device = "cpu";         // runtime.device: "cpu", "cuda", "cuda:1"
};

// What check_plan answers. `about` names what the refusal concerns, for the message's file:line:column:
// "ranks", "backend", "device", "model", or one of the plugin's own option keys; empty: the strategy.
// `capabilities` arrives as declared and may be narrowed for these options (ps in mode async: not exact,
// ranks disagree); the trainer follows the narrowed restricts_vocabulary.
struct PlanAnswer {
  std::uint32_t struct_size = sizeof(PlanAnswer);
  std::string refusal;  // empty: the cell can run
  std::string about;
  // Ranks the global batch is split over; 0 = all (a server that only serves: world - 1). From ABI 1.9
  // this is the one declaration of who computes: the ranks that do not are the lowest ones (0 .. world -
  // computing_ranks - 1), and the planner, the trainer and the projection all read it from here.
  int computing_ranks = 0;
  StrategyCapabilities capabilities;
};

// An option with the values it accepts: `choices` is "a|b|c" (String options), or nullptr for any value.
// A plugin may list its options as std::array<OptionDecl, N> instead of OptionSpec: the export macro
// splits them into the descriptor's options and its parallel option_choices.
struct OptionDecl {
  const char* key;
  OptionType type;
  const char* default_value;
  const char* help;
  const char* choices = nullptr;

  constexpr OptionSpec spec() const { return OptionSpec{key, type, default_value, help}; }
};

}  // namespace gradsweep::sdk

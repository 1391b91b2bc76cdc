#pragma once
// Which SDK minor appended each method of the boundary interfaces (sdk::StrategyAbi, sdk::ModelAbi): the
// one table PluginInstance::call consults, so that no call site can reach past the end of an older
// plugin's vtable. A method missing here does not compile with call (AbiMethod is incomplete for it):
// appending a virtual to the SDK means appending its row here.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <cstdint>

namespace gradsweep::plugins {

template <auto Method>
struct AbiMethod;  // minor: the SDK minor that appended it; name: for messages

#define GRADSWEEP_ABI_METHOD(ABI, METHOD, MINOR)    \
  template <>                                       \
  struct AbiMethod<&sdk::ABI::METHOD> {             \
    using Interface = sdk::ABI;                     \
    static constexpr std::uint32_t minor = (MINOR); \
    static constexpr const char* name = #METHOD;    \
  };

GRADSWEEP_ABI_METHOD(StrategyAbi, setup, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, precision, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, loss_scale, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, begin_step, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, gradient_ready, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, end_backward, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, update, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, save_state, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, load_state, 0)
GRADSWEEP_ABI_METHOD(StrategyAbi, role, 1)
GRADSWEEP_ABI_METHOD(StrategyAbi, output_vocabulary, 2)
GRADSWEEP_ABI_METHOD(StrategyAbi, unit_event, 4)
GRADSWEEP_ABI_METHOD(StrategyAbi, hold_parameters, 4)
GRADSWEEP_ABI_METHOD(StrategyAbi, load_resharded, 7)

GRADSWEEP_ABI_METHOD(ModelAbi, info, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, parameters, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, buffers, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, loss, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, flops_per_token, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, set_training, 0)
GRADSWEEP_ABI_METHOD(ModelAbi, units, 4)
GRADSWEEP_ABI_METHOD(ModelAbi, set_unit_hooks, 4)
GRADSWEEP_ABI_METHOD(ModelAbi, export_weights, 5)
GRADSWEEP_ABI_METHOD(ModelAbi, import_weights, 6)
GRADSWEEP_ABI_METHOD(ModelAbi, logits, 6)

#undef GRADSWEEP_ABI_METHOD

}  // namespace gradsweep::plugins

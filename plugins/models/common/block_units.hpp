#pragma once
// SDK 1.4 units for a model built of numbered blocks whose parameters are named "<prefix><i>.…" (gpt2's
// "h.3.attn.c_attn.weight", llama's "layers.3.mlp.up_proj.weight"): block i is unit i, named "<prefix><i>";
// every other parameter (embeddings, a final norm, the head) stays in the root. Header-only.
#include <gradsweep/sdk/model.hpp>

#include <torch/ordered_dict.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsweep::models {

inline std::vector<sdk::ModelUnit> block_units(const torch::OrderedDict<std::string, torch::Tensor>& named,
                                               const std::string& prefix, std::int64_t blocks) {
  std::vector<sdk::ModelUnit> units(static_cast<std::size_t>(blocks));
  for (std::size_t u = 0; u < units.size(); ++u) units[u].name = prefix + std::to_string(u);
  std::size_t index = 0;
  const std::size_t at = prefix.size();
  for (const auto& item : named) {
    const std::string& name = item.key();
    if (name.rfind(prefix, 0) == 0)
      units[std::stoul(name.substr(at, name.find('.', at) - at))].parameters.push_back(index);
    ++index;
  }
  return units;
}

}  // namespace gradsweep::models

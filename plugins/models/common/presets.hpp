#pragma once
// Named sizes ("presets") for model plugins, and how they combine with the user's options.
//
// A preset fixes every size; a size the user also gives overrides the preset's. Without a preset every
// size must be given. Sizes are checked here, before a tensor is allocated, so a bad experiment fails
// with a sentence naming the option rather than with a LibTorch shape error.
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/status.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::models {

template <class Config>
struct NamedPreset {
  const char* name;
  Config config;
};

template <class Config>
std::string preset_names(const std::vector<NamedPreset<Config>>& presets) {
  std::string names;
  for (const auto& p : presets) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

// The option "preset" (if given) with the integer options in `sizes` applied over it; each size positive.
template <class Config>
Config resolve_sizes(const sdk::Options& options, const std::vector<NamedPreset<Config>>& presets,
                     const std::string& model,
                     std::initializer_list<std::pair<const char*, std::int64_t Config::*>> sizes) {
  Config config{};
  const bool has_preset = options.has("preset");
  if (has_preset) {
    const std::string& name = options.text("preset");
    const NamedPreset<Config>* found = nullptr;
    for (const auto& p : presets)
      if (name == p.name) found = &p;
    if (found == nullptr)
      throw sdk::Error(model + ": unknown preset '" + name + "'; known presets: " + preset_names(presets));
    config = found->config;
  }
  std::string all;
  for (const auto& [key, member] : sizes) all += (all.empty() ? "" : ", ") + std::string(key);
  for (const auto& [key, member] : sizes) {
    if (options.has(key))
      config.*member = options.integer(key);
    else if (!has_preset)
      throw sdk::Error(model + ": option '" + key + "' is not set and no preset was given; set 'preset' (" +
                       preset_names(presets) + ") or all of " + all);
    if (config.*member <= 0)
      throw sdk::Error(model + ": " + key + " must be positive, got " + std::to_string(config.*member));
  }
  return config;
}

// Dropout must be a probability below one.
inline double resolve_dropout(const sdk::Options& options, const std::string& model) {
  const double p = options.number_or("dropout", 0.0);
  if (p < 0.0 || p >= 1.0) throw sdk::Error(model + ": dropout must be in [0, 1), got " + std::to_string(p));
  return p;
}

}  // namespace gradsweep::models

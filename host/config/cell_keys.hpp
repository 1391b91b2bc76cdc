#pragma once
// The one typed table of a cell's host keys (data, train, eval, checkpoint, metrics, tracking, runtime): for
// each key its type, default, range or choices, help and unit, and the CellConfig field its value goes to.
// The type comes from the field, so the two cannot disagree. Validation (option_schema.hpp), CellConfig's
// values, `gradsweep reference` (docs/reference/configuration.md) and the reference's defaults all come from
// here: a default is written nowhere else (tests/host/config_defaults_test.cpp greps for copies).
#include "config/cell_config.hpp"
#include "config/option_schema.hpp"

#include <gradsweep/sdk/options.hpp>

#include <map>
#include <string>
#include <vector>

namespace gradsweep::config {

// Puts a key's resolved value (from its section's options) into its CellConfig field.
using StoreValue = void (*)(CellConfig& config, const sdk::Options& section, const char* key);

struct CellKey {
  HostOption option;
  // nullptr: the parser reads the value itself, because it is not one field's copy (data paths, a list;
  // runtime.tf32, resolved against the device).
  StoreValue store = nullptr;
};

// Section -> its keys, in the order the reference lists them.
const std::map<std::string, std::vector<CellKey>>& cell_keys();

// Every key's value of `sections` (as resolved against cell_keys()) into its field of `config`.
void store_cell_keys(CellConfig& config, const std::map<std::string, sdk::Options>& sections);

}  // namespace gradsweep::config

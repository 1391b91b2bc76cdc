#pragma once
// Short names for cells shown side by side (plot legends, comparison rows): only the axes whose value
// differs between the items are named, a plugin's options in parentheses are dropped when the names
// alone tell the items apart ("gpt2" rather than "gpt2(preset=gpt2-small-cpu,vocab_size=257)"), and a
// dotted axis is called by its last part when that is unambiguous ("lr=2e-3" for train.lr).
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::analysis {

// (axis, value), the same axes in the same order for all items; an item may have more at the end (a resized
// cell's "resized"), and is named by them.
using AxisValues = std::vector<std::pair<std::string, std::string>>;

// One label per item; `fallback` for every item when nothing differs.
std::vector<std::string> distinct_labels(const std::vector<AxisValues>& items, const std::string& fallback);

// "gpt2(preset=x)" -> "gpt2".
std::string without_options(const std::string& value);

}  // namespace gradsweep::analysis

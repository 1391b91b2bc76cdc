#pragma once
// Where a key of a cell's tree was written in the experiment file, for messages: file:line:column of the
// key or its value (or of its nearest written ancestor), and the cell loader's messages, which name
// positions in the cell's emitted text, pointed back at the file.
#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::experiment {

// The name the planner gives the cell's emitted text when it loads it as `gradsweep train` would: the tag
// that relocate() replaces.
inline constexpr const char* kEmittedName = "<cell>";

// "file:line:column" of a node of the file, or "file" for a node that has no position (made, or cloned).
std::string location(const std::string& file, const YAML::Node& node);

// The node a key path names in `root`: the key itself when `want_key` ("unknown key" messages), else its
// value; the nearest existing ancestor when the key is missing, `root` when none is.
YAML::Node node_for_key(const YAML::Node& root, const std::string& key, bool want_key);

// A problem the cell loader found in the emitted text ("<cell>:3:5: train.lr: ..."), placed at the key's
// position in `cell_root` (a cell tree made with its positions kept) within `file`.
std::string relocate(const std::string& problem, const YAML::Node& cell_root, const std::string& file);

}  // namespace gradsweep::experiment

#pragma once
// The one door through which configuration text becomes a YAML tree: cell files, experiment files and
// --set values. yaml-cpp parses every YAML feature, but what it builds is a graph: an alias is the
// anchored node itself, so a recursive alias (`a: &x [*x]`) is a cycle and an alias bomb is a small graph
// that expands to billions of nodes; the host's walks of the tree then crashed or never ended (issue 27).
// What passes this door is a tree with a defined meaning and a bounded size:
//   - an alias is a copy of the node it names: editing one place (--set, a matrix axis) never edits
//     another. The anchor's own place keeps its line:column; a copy has none (yaml-cpp's API cannot give
//     a new node one), so a problem inside a copy is named by its key alone. An alias inside the node it
//     names (recursive) is refused at the anchor;
//   - merge keys (`<<: *base`) are refused: YAML 1.2, which yaml-cpp implements, has none, so `<<` would be
//     an ordinary key whose meaning a reader of the file could only guess;
//   - tags of YAML's core schema (!!str, !!int, !!float, !!bool, !!null on scalars, !!seq, !!map on their
//     kinds) are accepted and change nothing, since each key's declared type decides how its text is read;
//     every other tag is refused;
//   - keys are names: a null, list or mapping key is refused;
//   - one document per file; bounds on the text, each scalar, the nesting depth and the expanded size
//     (aliases counted as the copies they are), all checked while parsing, so that an answer comes at once.
// Every refusal is a ConfigError "file:line:column: what is wrong".
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

namespace gradsweep::config {

struct YamlLimits {
  static constexpr std::size_t kMaxTextBytes = 4u << 20;       // the file (or --set value) as written
  static constexpr std::size_t kMaxScalarBytes = 1u << 20;     // one scalar
  static constexpr std::size_t kMaxDepth = 64;                 // mappings and lists inside each other
  static constexpr std::size_t kMaxNodes = 100000;             // after aliases are copied
  static constexpr std::size_t kMaxExpandedBytes = 16u << 20;  // scalar text after aliases are copied
};

// Parses `text` (named `file` in messages) into a tree as described above; an empty text is a null node.
// Throws ConfigError.
YAML::Node parse_config_yaml(const std::string& text, const std::string& file);

}  // namespace gradsweep::config

#include "config/yaml_guard.hpp"

#include "config/config_error.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace gradsweep::config {

namespace {

using Limits = YamlLimits;

// Thrown out of the event handler, which stops yaml-cpp's parser at the first refusal: an alias bomb or a
// deep nest is never walked to its end.
struct Refusal {
  YAML::Mark mark;
  std::string message;
};

// What a node stands for once its aliases are copies.
struct Extent {
  std::size_t nodes = 0;
  std::size_t bytes = 0;   // scalar text
  std::size_t height = 0;  // 0: a scalar; 1: a collection of scalars; ...
};

std::string where(const YAML::Mark& mark) {
  return std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// The tag as written: yaml-cpp hands the core schema's tags expanded.
std::string written_tag(const std::string& tag) {
  const std::string core = "tag:yaml.org,2002:";
  return tag.rfind(core, 0) == 0 ? "!!" + tag.substr(core.size()) : tag;
}

enum class Kind { Scalar, Sequence, Map };

// "?" is an untagged plain scalar or collection, "!" an untagged quoted scalar.
void check_tag(const std::string& tag, Kind kind, const YAML::Mark& mark) {
  if (tag.empty() || tag == "?" || tag == "!") return;
  static const std::set<std::string> scalars{"!!str", "!!int", "!!float", "!!bool", "!!null"};
  const std::string name = written_tag(tag);
  const bool core = scalars.count(name) || name == "!!seq" || name == "!!map";
  if (!core)
    throw Refusal{mark, "tag " + name +
                            " is not supported; only YAML's core tags (!!str, !!int, !!float, !!bool, !!null, "
                            "!!seq, !!map) are accepted, and they change nothing"};
  const bool fits = kind == Kind::Scalar ? scalars.count(name) > 0 : name == (kind == Kind::Map ? "!!map" : "!!seq");
  if (!fits)
    throw Refusal{mark, "tag " + name + " on a " +
                            (kind == Kind::Scalar ? "scalar"
                             : kind == Kind::Map  ? "mapping"
                                                  : "list")};
}

// Checks the document as yaml-cpp's parser reports it, event by event, and remembers which anchored nodes
// are aliased (those are the nodes the tree shares, and so must copy).
class Guard : public YAML::EventHandler {
 public:
  std::set<std::size_t> aliased_positions;  // Mark::pos of every node an alias names

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1)
      throw Refusal{mark, "a second YAML document ('---'); a configuration file holds one document"};
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    check_key(mark, "null", false);
    begin(mark, anchor, Kind::Scalar);
    finish(mark, anchor, Extent{1, 0, 0});
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (is_key() && tag == "?" && value == "<<")
      throw Refusal{mark,
                    "merge keys (<<) are not supported (YAML 1.2 has none); write the keys out, or alias the whole "
                    "mapping"};
    check_tag(tag, Kind::Scalar, mark);
    if (value.size() > Limits::kMaxScalarBytes)
      throw Refusal{mark, "a scalar of " + std::to_string(value.size()) + " bytes; at most " +
                              mib(Limits::kMaxScalarBytes) + " are accepted"};
    begin(mark, anchor, Kind::Scalar);
    if (anchor != 0) anchors_[anchor].name_like = true;
    finish(mark, anchor, Extent{1, value.size(), 0});
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const Anchor& a = anchors_.at(anchor);  // yaml-cpp refuses an alias of an undefined anchor itself
    if (!a.closed)
      throw Refusal{a.mark, "anchor &" + a.name + " is used inside its own node (alias at " + where(mark) +
                                "): a recursive alias has no finite value"};
    check_key(mark, "an alias of a list, a mapping or null", a.name_like);
    aliased_positions.insert(static_cast<std::size_t>(a.mark.pos));
    begin(mark, 0, Kind::Scalar);
    if (open_.size() + a.extent.height > Limits::kMaxDepth)
      throw Refusal{mark, "alias *" + a.name + " nests deeper than " + std::to_string(Limits::kMaxDepth) + " levels"};
    finish(mark, 0, a.extent);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    check_key(mark, "a list", false);
    check_tag(tag, Kind::Sequence, mark);
    begin(mark, anchor, Kind::Sequence);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    check_key(mark, "a mapping", false);
    check_tag(tag, Kind::Map, mark);
    begin(mark, anchor, Kind::Map);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapEnd() override { end(); }
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

 private:
  struct Anchor {
    std::string name;
    YAML::Mark mark;
    bool name_like = false;  // a scalar that is not null: usable as a key
    bool closed = false;
    Extent extent;
  };
  struct Open {
    YAML::anchor_t anchor;
    bool is_map;
    Extent before;             // the document's totals when the collection opened
    std::size_t children = 0;  // in a mapping, even: the next child is a key
    std::size_t height = 0;    // of its tallest child
  };

  bool is_key() const { return !open_.empty() && open_.back().is_map && open_.back().children % 2 == 0; }

  // Configuration keys are names: a complex key (`? [a, b]: 1`) or a null one has no meaning here.
  void check_key(const YAML::Mark& mark, const std::string& what, bool name_like) const {
    if (is_key() && !name_like) throw Refusal{mark, "a key must be a name, not " + what};
  }

  // A node starts; an anchored one is open (and may not be aliased) until it ends.
  void begin(const YAML::Mark& mark, YAML::anchor_t anchor, Kind kind) {
    if (anchor != 0) anchors_[anchor] = Anchor{anchor_name_, mark, false, false, {}};
    if (kind == Kind::Scalar) return;
    if (open_.size() + 1 > Limits::kMaxDepth)
      throw Refusal{mark, "nested deeper than " + std::to_string(Limits::kMaxDepth) + " levels"};
    add(mark, Extent{1, 0, 0});
    open_.push_back(Open{anchor, kind == Kind::Map, total_});
  }

  void end() {
    const Open done = open_.back();
    open_.pop_back();
    const Extent extent{total_.nodes - done.before.nodes + 1, total_.bytes - done.before.bytes, done.height + 1};
    record(done.anchor, extent);
    child_done(extent.height);
  }

  void finish(const YAML::Mark& mark, YAML::anchor_t anchor, const Extent& extent) {
    add(mark, extent);
    record(anchor, extent);
    child_done(extent.height);
  }

  void record(YAML::anchor_t anchor, const Extent& extent) {
    if (anchor == 0) return;
    anchors_[anchor].closed = true;
    anchors_[anchor].extent = extent;
  }

  void child_done(std::size_t height) {
    if (open_.empty()) return;
    ++open_.back().children;
    open_.back().height = std::max(open_.back().height, height);
  }

  void add(const YAML::Mark& mark, const Extent& extent) {
    total_.nodes += extent.nodes;
    total_.bytes += extent.bytes;
    if (total_.nodes > Limits::kMaxNodes)
      throw Refusal{mark, "the document grows past " + std::to_string(Limits::kMaxNodes) +
                              " nodes here (each alias counts as a copy of its node)"};
    if (total_.bytes > Limits::kMaxExpandedBytes)
      throw Refusal{mark, "the document's text grows past " + mib(Limits::kMaxExpandedBytes) +
                              " here (each alias counts as a copy of its node)"};
  }

  int documents_ = 0;
  std::string anchor_name_;
  std::map<YAML::anchor_t, Anchor> anchors_;
  std::vector<Open> open_;
  Extent total_;
};

// Where the text passes its bound, so that the refusal has a position like every other.
YAML::Mark mark_at(const std::string& text, std::size_t pos) {
  YAML::Mark mark = YAML::Mark::null_mark();
  const auto begin = text.begin(), at = text.begin() + static_cast<std::ptrdiff_t>(pos);
  const auto last_newline = std::find(std::make_reverse_iterator(at), text.rend(), '\n');
  mark.pos = static_cast<int>(pos);
  mark.line = static_cast<int>(std::count(begin, at, '\n'));
  mark.column = static_cast<int>(std::distance(last_newline.base(), at));
  return mark;
}

ConfigError refusal(const std::string& file, const YAML::Mark& mark, const std::string& message) {
  return ConfigError({file + (mark.is_null() ? "" : ":" + where(mark)) + ": " + message});
}

// A fresh node with the same content, tags and styles; new nodes have no position (yaml-cpp's public API
// cannot give them one), so a problem inside a copy is reported by its key alone.
YAML::Node deep_copy(const YAML::Node& node) {
  const YAML::NodeType::value type = node.Type();
  YAML::Node copy = type == YAML::NodeType::Scalar ? YAML::Node(node.Scalar()) : YAML::Node(type);
  if (type == YAML::NodeType::Sequence)
    for (const YAML::Node& item : node) copy.push_back(deep_copy(item));
  if (type == YAML::NodeType::Map)
    for (const auto& item : node) copy.force_insert(deep_copy(item.first), deep_copy(item.second));
  copy.SetTag(node.Tag());
  copy.SetStyle(node.Style());
  return copy;
}

// yaml-cpp's tree shares an aliased node between its places, and assigning through any handle of it would
// change every place. Walking in document order, the first place of an aliased node (its anchor's) keeps
// it, with its positions; every later place gets a deep copy, swapped in by emptying the parent and filling
// it again in order (the parent's own node, and so its position, kept).
class Unsharer {
 public:
  explicit Unsharer(const std::set<std::size_t>& aliased) : aliased_(aliased) {}

  void walk(YAML::Node node) {
    if (!node.IsSequence() && !node.IsMap()) return;
    std::vector<YAML::Node> children;  // a mapping's keys and values, alternating
    if (node.IsSequence())
      for (const YAML::Node& item : node) children.push_back(item);
    else
      for (const auto& item : node) children.insert(children.end(), {item.first, item.second});
    const std::vector<YAML::Node> originals = children;
    bool copied = false;
    for (YAML::Node& child : children) {
      if (repeats(child)) {
        child.reset(deep_copy(child));  // the handle only: assigning would rewrite the shared node
        copied = true;
      } else {
        walk(child);
      }
    }
    if (copied) refill(node, originals, children);
  }

 private:
  // A later place of an aliased node.
  bool repeats(const YAML::Node& child) {
    const YAML::Mark mark = child.Mark();
    if (mark.is_null() || !aliased_.count(static_cast<std::size_t>(mark.pos))) return false;
    return !seen_.insert(static_cast<std::size_t>(mark.pos)).second;
  }

  static void refill(YAML::Node node, const std::vector<YAML::Node>& originals,
                     const std::vector<YAML::Node>& children) {
    if (node.IsSequence()) {
      while (node.size() > 0) node.remove(node.size() - 1);
      for (const YAML::Node& child : children) node.push_back(child);
      return;
    }
    // By identity: of two equal keys (a duplicate, refused later with both positions) each goes once.
    for (std::size_t i = 0; i < originals.size(); i += 2) node.remove(originals[i]);
    for (std::size_t i = 0; i < children.size(); i += 2) node.force_insert(children[i], children[i + 1]);
  }

  const std::set<std::size_t>& aliased_;
  std::set<std::size_t> seen_;
};

}  // namespace

YAML::Node parse_config_yaml(const std::string& text, const std::string& file) {
  if (text.size() > Limits::kMaxTextBytes)
    throw refusal(file, mark_at(text, Limits::kMaxTextBytes),
                  "the text is larger than " + mib(Limits::kMaxTextBytes) + "; a configuration is far smaller");
  Guard guard;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(guard)) {
    }
  } catch (const Refusal& r) {
    throw refusal(file, r.mark, r.message);
  } catch (const YAML::Exception& e) {
    throw refusal(file, e.mark, e.msg);
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {  // it parsed above: only a yaml-cpp that disagrees with itself gets here
    throw refusal(file, e.mark, e.msg);
  }
  if (!guard.aliased_positions.empty()) Unsharer(guard.aliased_positions).walk(root);
  return root;
}

}  // namespace gradsweep::config

#include "comm/core/host_group.hpp"

#include <stdexcept>

namespace gradsweep::comm {

std::string group_kind_name(sdk::GroupKind kind) {
  switch (kind) {
    case sdk::GroupKind::Node: return "node";
    case sdk::GroupKind::AcrossNodes: return "across_nodes";
  }
  throw std::invalid_argument("group: unknown GroupKind " + std::to_string(static_cast<std::uint32_t>(kind)));
}

std::string split_name(int color) { return "split(" + std::to_string(color) + ")"; }

std::string negative_color_error(int color, int rank) {
  return "split: color " + std::to_string(color) + " on rank " + std::to_string(rank) +
         ": colors must be >= 0, every rank must be in a group";
}

}  // namespace gradsweep::comm
